// Repeated eager steps replayed as CUDA graphs (native/step-graphs.h) against enforceEager executors (the
// reference): the same steps on two executors of one checkpoint must give the same logits, bit for bit, whether a
// step ran eagerly, was captured after its eager run, or replayed its graph; a replayed chunk's K/V must be what
// the next chunk over it reads; and the cache keeps 32 graphs (StepGraphs::kMaxGraphs), evicting the least recently
// used.
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range, type SeqStep } from '@ferrum/models/testing';
import { seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, differingBits, dummyQwen3Dir, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();

/** Slots of sequence `s`: each sequence owns 512 (the pools hold 4,096). */
const base = (s: number) => 512 * s;

const models = [
  ...tinyModels().map((m) => ({ label: m.label, dir: m.dir, format: 'safetensors' as const })),
  // Head dim 128 takes the prefill kernels of real models (wgmma and cluster merges on Hopper) and cuBLASLt's products.
  { label: 'dummy qwen3 head dim 128', dir: dummyQwen3Dir(128, 4, 2), format: 'dummy' as const },
];

describe.skipIf(!available)(
  `cuda: repeated eager steps replayed as graphs match eager steps${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(models.map((m) => [m.label, m] as const))('%s', (_label, model) => {
      let eager: CudaModelExecutor;
      let graphs: CudaModelExecutor;
      let off: CudaModelExecutor;
      let vocab = 0;
      beforeAll(async () => {
        const config = await loadModelConfig(model.dir);
        vocab = config.vocabSize;
        const load = async (options: Record<string, unknown>) =>
          (await loadCuda(model.dir, config, options, model.format)) as CudaModelExecutor;
        eager = await load({ enforceEager: true });
        graphs = await load({});
        // The runner reads the switch when the model loads.
        vi.stubEnv('FERRUM_CUDA_STEP_GRAPHS', '0');
        off = await load({}).finally(() => vi.unstubAllEnvs());
      });
      afterAll(async () => {
        for (const executor of [eager, graphs, off]) await executor?.dispose();
      });

      const random = seededRandom(2024);
      const tokens = (count: number) => Array.from({ length: count }, () => Math.floor(random() * vocab));

      /**
       * One step on every executor: the logits of each, and whether `graphs` replayed it. (A capture is counted when
       * it ends, which may be after its step's result: captures are read a step later.)
       */
      const step = async (steps: SeqStep[]) => {
        const before = graphs.memory().stepGraphSteps;
        const results = await Promise.all([eager, graphs, off].map((e) => e.forward(buildBatch(steps))));
        const logits = results.map((r) => {
          if (!r.logits) throw new Error('no logits returned');
          return r.logits;
        });
        return { logits, replayed: graphs.memory().stepGraphSteps - before };
      };
      const captured = () => graphs.memory().stepGraphsCaptured;
      const expectSameBits = (logits: Float32Array[]) => {
        const [reference, ...others] = logits;
        expect(reference.some((v) => v !== 0)).toBe(true);
        for (const other of others) expect(differingBits(reference, other)).toBe(0);
      };

      it('replays a prompt length from its third step, with the K/V the next chunk reads', async () => {
        const chunk = 40;
        const prompts = [0, 1, 2, 3].map(() => tokens(2 * chunk));
        // The first chunk of four sequences (in their own slots): eager, eager and captured, then replayed twice.
        const capturedBefore = captured();
        const replayed: number[] = [];
        for (const [s, prompt] of prompts.entries()) {
          const first = await step([
            { tokens: prompt.slice(0, chunk), kvSlots: range(base(s), chunk), sample: 'last' },
          ]);
          expectSameBits(first.logits);
          replayed.push(first.replayed);
        }
        // The second chunk over each first (every row sampled: another layout) reads the K/V those steps wrote.
        for (const [s, prompt] of prompts.entries()) {
          const second = await step([
            { tokens: prompt.slice(chunk), kvSlots: range(base(s), 2 * chunk), sample: 'all' },
          ]);
          expectSameBits(second.logits);
          replayed.push(second.replayed);
        }
        expect(replayed).toEqual([0, 0, 1, 1, 0, 0, 1, 1]);
        expect(captured() - capturedBefore).toBe(2);
        expect(off.memory().stepGraphSteps).toBe(0);
        expect(eager.memory().stepGraphSteps).toBe(0);
      });

      it('replays a mixed step of decode rows and a prompt chunk', async () => {
        const capturedBefore = captured();
        const prompts = [4, 5, 6].map(() => tokens(30));
        const replayed: number[] = [];
        for (const [i, prompt] of prompts.entries()) {
          const prefill = await step([{ tokens: prompt, kvSlots: range(base(i + 4), 30), sample: 'last' }]);
          expectSameBits(prefill.logits);
          replayed.push(prefill.replayed);
        }
        for (let round = 0; round < 3; round++) {
          // Decode rows of two sequences at their round's length, and a fresh 12-token chunk of a third.
          const mixed = await step([
            { tokens: tokens(1), kvSlots: range(base(4), 30 + round + 1), sample: 'last' },
            { tokens: tokens(1), kvSlots: range(base(5), 30 + round + 1), sample: 'last' },
            { tokens: tokens(12), kvSlots: range(base(7) + 16 * round, 12), sample: 'last' },
          ]);
          expectSameBits(mixed.logits);
          replayed.push(mixed.replayed);
        }
        // Each round's kv lists are one entry longer: a new layout each time, so nothing replays.
        expect(replayed).toEqual([0, 0, 1, 0, 0, 0]);
        for (let round = 0; round < 3; round++) {
          // The same shapes each round (a 10-token chunk: unlike any above): decode rows over 31 entries (the
          // newest rewritten in place), and a fresh chunk.
          const mixed = await step([
            { tokens: tokens(1), kvSlots: range(base(4), 31), sample: 'last' },
            { tokens: tokens(1), kvSlots: range(base(6), 31), sample: 'last' },
            { tokens: tokens(10), kvSlots: range(base(7) + 64 + 16 * round, 10), sample: 'last' },
          ]);
          expectSameBits(mixed.logits);
          replayed.push(mixed.replayed);
        }
        expect(replayed).toEqual([0, 0, 1, 0, 0, 0, 0, 0, 1]);
        // The prompts' layout and the repeated mixed one.
        expect(captured() - capturedBefore).toBe(2);
      });

      it('keeps 32 graphs, evicting the least recently used', async () => {
        const prefill = (length: number) =>
          step([{ tokens: tokens(length), kvSlots: range(base(0), length), sample: 'last' }]);
        const before = graphs.memory();
        // 34 prompt lengths unlike any above, each run twice: seen, then captured. The tests above left older graphs,
        // evicted first.
        for (const length of range(100, 34)) {
          for (let i = 0; i < 2; i++) expectSameBits((await prefill(length)).logits);
        }
        // The first two lengths' graphs were evicted: the next run of the first is eager and captures it again,
        // evicting the third's, whose next run does the same to the fourth's; the fifth's is still kept. (The last
        // step replays, so that every capture before it has been counted.)
        const replayed: number[] = [];
        for (const length of [100, 100, 102, 102, 104]) {
          const run = await prefill(length);
          expectSameBits(run.logits);
          replayed.push(run.replayed);
        }
        expect(replayed).toEqual([0, 1, 0, 1, 1]);
        const after = graphs.memory();
        expect(after.stepGraphsCaptured - before.stepGraphsCaptured).toBe(36);
        expect(after.stepGraphSteps - before.stepGraphSteps).toBe(3);
        expect(after.clusterMergedLaunches).toBe(eager.memory().clusterMergedLaunches);
      });
    });
  },
);
