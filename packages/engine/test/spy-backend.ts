import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import type { ForwardBatch } from '@ferrum/types';

/** The shape of one forwarded step: per sequence, its number of new tokens. */
export type StepShape = number[];

/** What a spy saw: the shape of every forward, and how many slots were swapped each way. */
export interface SpyRecord {
  readonly steps: StepShape[];
  readonly swaps: { out: number; in: number };
}

/** A CPU backend that records every forward's shape and KV swap, to observe scheduling from outside. */
export function createSpyBackend(): { backend: ComputeBackend } & SpyRecord {
  const steps: StepShape[] = [];
  const swaps = { out: 0, in: 0 };
  const cpu = createCpuBackend();
  const backend: ComputeBackend = {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: () => cpu.probe(),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      return {
        info: inner.info,
        kv: {
          numSlots: inner.kv.numSlots,
          numHostSlots: inner.kv.numHostSlots,
          copySlots: (src, dst) => inner.kv.copySlots(src, dst),
          swapOut(deviceSlots, hostSlots) {
            swaps.out += deviceSlots.length;
            return inner.kv.swapOut(deviceSlots, hostSlots);
          },
          swapIn(hostSlots, deviceSlots) {
            swaps.in += deviceSlots.length;
            return inner.kv.swapIn(hostSlots, deviceSlots);
          },
        },
        forward(batch: ForwardBatch) {
          const shape: StepShape = [];
          for (let b = 0; b < batch.numSeqs; b++) shape.push(batch.qIndptr[b + 1] - batch.qIndptr[b]);
          steps.push(shape);
          return inner.forward(batch);
        },
        dispose: () => inner.dispose(),
      };
    },
  };
  return { backend, steps, swaps };
}
