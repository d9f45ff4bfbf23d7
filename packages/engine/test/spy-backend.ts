import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import type { ForwardBatch } from '@ferrum/types';

/** The shape of one forwarded step: per sequence, its number of new tokens. */
export type StepShape = number[];

/** What a spy saw: the shape of every forward, and how many slots were swapped each way. */
export interface SpyRecord {
  readonly steps: StepShape[];
  readonly swaps: { out: number; in: number };
  /** Forwards called while an earlier one had not settled, and forwards that passed `previousTokens`. */
  readonly overlap: { early: number; previousTokens: number };
}

export interface SpyOptions {
  /** Backend to watch; the CPU backend by default. */
  readonly inner?: ComputeBackend;
  /** false: hide the runtime's `previousTokens` capability, so the engine never launches a step early. */
  readonly previousTokens?: false;
}

/** A backend that records every forward's shape, overlap and KV swap, to observe scheduling from outside. */
export function createSpyBackend(options: SpyOptions = {}): { backend: ComputeBackend } & SpyRecord {
  const steps: StepShape[] = [];
  const swaps = { out: 0, in: 0 };
  const overlap = { early: 0, previousTokens: 0 };
  const inner = options.inner ?? createCpuBackend();
  let numInFlight = 0;
  const settled = () => {
    numInFlight--;
  };
  const backend: ComputeBackend = {
    specificationVersion: 'v1',
    name: inner.name,
    async probe() {
      const capabilities = await inner.probe();
      return options.previousTokens === false ? { ...capabilities, previousTokens: false } : capabilities;
    },
    async loadModel(spec): Promise<ModelExecutor> {
      const executor = await inner.loadModel(spec);
      return {
        info: executor.info,
        kv: {
          numSlots: executor.kv.numSlots,
          numHostSlots: executor.kv.numHostSlots,
          copySlots: (src, dst) => executor.kv.copySlots(src, dst),
          swapOut(deviceSlots, hostSlots) {
            swaps.out += deviceSlots.length;
            return executor.kv.swapOut(deviceSlots, hostSlots);
          },
          swapIn(hostSlots, deviceSlots) {
            swaps.in += deviceSlots.length;
            return executor.kv.swapIn(hostSlots, deviceSlots);
          },
        },
        forward(batch: ForwardBatch) {
          const shape: StepShape = [];
          for (let b = 0; b < batch.numSeqs; b++) shape.push(batch.qIndptr[b + 1] - batch.qIndptr[b]);
          steps.push(shape);
          if (numInFlight > 0) overlap.early++;
          if (batch.previousTokens !== undefined) overlap.previousTokens++;
          numInFlight++;
          const result = executor.forward(batch);
          result.then(settled, settled);
          return result;
        },
        dispose: () => executor.dispose(),
      };
    },
  };
  return { backend, steps, swaps, overlap };
}
