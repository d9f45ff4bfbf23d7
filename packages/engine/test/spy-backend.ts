import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import type { ForwardBatch } from '@ferrum/types';

/** The shape of one forwarded step: per sequence, its number of new tokens. */
export type StepShape = number[];

/** A CPU backend that records the shape of every forward, to observe scheduling from outside. */
export function createSpyBackend(): { backend: ComputeBackend; steps: StepShape[] } {
  const steps: StepShape[] = [];
  const cpu = createCpuBackend();
  const backend: ComputeBackend = {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: () => cpu.probe(),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      return {
        info: inner.info,
        kv: inner.kv,
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
  return { backend, steps };
}
