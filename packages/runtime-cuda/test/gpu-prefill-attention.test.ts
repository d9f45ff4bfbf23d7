// The tensor-core prefill kernels against the decode-row attention kernel (itself checked against
// transformers by the golden tests): a dummy-weight Qwen3-shaped model with real head dims (64, 128) sees the
// same tokens prefilled in one step (prefill tiles, several per sequence), one token per step (decode rows
// only), and in mixed steps where a prefill chunk over a cached prefix shares the batch with decode rows; a
// chunk over a long cached prefix is cut into kv splits, merged in a thread-block cluster (the Hopper kernel) or by
// the combine kernel (gpu-cluster-splits.test.ts checks that the two merges agree bit for bit).
// Both kernels run: the default (on an sm_90a build on Hopper, the wgmma kernel) and the mma.sync kernel
// (FERRUM_CUDA_WGMMA=0, as on every other GPU).
// The prefill kernels carry P as a bf16 hi + lo pair, so they agree with the decode kernel to f32 rounding;
// what remains is the GEMMs' bf16 rounding at different row counts (GEMV for one row, cuBLASLt for many):
// every position's logits must agree within the golden suite's cross-path tolerance.
import type { ModelExecutor } from '@ferrum/interfaces';
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, maxAbsDiff, range, type SeqStep, valueRange } from '@ferrum/models/testing';
import { seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cudaAvailability, dummyQwen3Dir, loadCuda, prefillInSteps } from './support.js';

const { available, reason } = await cudaAvailability();

const PROMPT = 200; // four prefill tiles of 64 rows, the last one partial
// A 64-token chunk over 1,100 cached entries: 4 heads leave the GPU short of blocks, so the kv list is split.
const LONG_PREFIX = 1100;
const LONG_CHUNK = 64;
const TOLERANCE = 5e-3; // of the logit range, as the golden suite's cross-path checks

describe.skipIf(!available)(
  `cuda: prefill attention tiles match decode-row attention${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    // Groups of 2 query heads a kv head (the wgmma kernels serve two heads a block) and 1 (one head a block).
    // The wgmma kernel follows the grid: 4 heads leave it under two blocks a multiprocessor (the producer-warp
    // kernel, one block a multiprocessor), 256 heads over (the kernel whose whole block gathers, two blocks a
    // multiprocessor) on GPUs of up to 255 multiprocessors.
    describe.each([
      { headDim: 64, heads: 4, kvHeads: 2, kernel: 'default' },
      { headDim: 128, heads: 4, kvHeads: 2, kernel: 'default' },
      { headDim: 64, heads: 4, kvHeads: 4, kernel: 'default' },
      { headDim: 128, heads: 4, kvHeads: 4, kernel: 'default' },
      { headDim: 128, heads: 256, kvHeads: 8, kernel: 'default' },
      { headDim: 64, heads: 4, kvHeads: 2, kernel: 'mma.sync' },
      { headDim: 128, heads: 4, kvHeads: 2, kernel: 'mma.sync' },
    ])(
      'head dim $headDim, $heads heads, $kvHeads kv heads, $kernel kernel',
      ({ headDim, heads, kvHeads, kernel }) => {
        let executor: ModelExecutor;
        let vocab = 0;
        const prompt: number[] = [];
        beforeAll(async () => {
          const dir = dummyQwen3Dir(headDim, heads, kvHeads);
          const config = await loadModelConfig(dir);
          vocab = config.vocabSize;
          // The runner reads the switch when the model loads.
          if (kernel === 'mma.sync') vi.stubEnv('FERRUM_CUDA_WGMMA', '0');
          executor = await loadCuda(dir, config, { enforceEager: true }, 'dummy').finally(() =>
            vi.unstubAllEnvs(),
          );
          const random = seededRandom(99);
          for (let i = 0; i < LONG_PREFIX + LONG_CHUNK; i++) prompt.push(Math.floor(random() * vocab));
        });
        afterAll(async () => {
          await executor?.dispose();
        });

        const logitsOf = async (steps: SeqStep[]) => {
          const result = await executor.forward(buildBatch(steps));
          if (!result.logits) throw new Error('no logits returned');
          return result.logits;
        };

        it('one prefill step equals token-by-token decode at every position, and mixed steps agree', async () => {
          const whole = await logitsOf([
            { tokens: prompt.slice(0, PROMPT), kvSlots: range(0, PROMPT), sample: 'all' },
          ]);
          expect(whole.length).toBe(PROMPT * vocab);

          // Token by token at slots 1000.., decode rows only.
          const stepwise = new Float32Array(PROMPT * vocab);
          for (let i = 0; i < PROMPT; i++) {
            const row = await logitsOf([{ tokens: [prompt[i]], kvSlots: range(1000, i + 1), sample: 'all' }]);
            stepwise.set(row, i * vocab);
          }
          const range0 = valueRange(stepwise);
          expect(range0).toBeGreaterThan(0);
          expect(maxAbsDiff(whole, stepwise) / range0).toBeLessThanOrEqual(TOLERANCE);

          // Mixed: sequence A (slots 2000..) prefills its first 120 tokens, then its last 80 as a chunk over
          // that cached prefix in the same step as sequence B's decode row (B reuses slots 1000.., which hold
          // the whole prompt's K/V now, and re-decodes the last position).
          await executor.forward(
            buildBatch([{ tokens: prompt.slice(0, 120), kvSlots: range(2000, 120), sample: 'none' }]),
          );
          const mixed = await logitsOf([
            { tokens: [prompt[PROMPT - 1]], kvSlots: range(1000, PROMPT), sample: 'all' },
            { tokens: prompt.slice(120, PROMPT), kvSlots: range(2000, PROMPT), sample: 'all' },
          ]);
          const decodeRow = mixed.subarray(0, vocab);
          const chunkRows = mixed.subarray(vocab);
          const lastStepwise = stepwise.subarray((PROMPT - 1) * vocab);
          expect(maxAbsDiff(decodeRow, lastStepwise) / range0).toBeLessThanOrEqual(TOLERANCE);
          expect(maxAbsDiff(chunkRows, stepwise.subarray(120 * vocab)) / range0).toBeLessThanOrEqual(
            TOLERANCE,
          );
        });

        it('a chunk over a long cached prefix (kv splits) equals decode rows at its positions', async () => {
          const end = LONG_PREFIX + LONG_CHUNK;
          await prefillInSteps(executor, prompt.slice(0, LONG_PREFIX), 2500);
          const chunk = await logitsOf([
            { tokens: prompt.slice(LONG_PREFIX, end), kvSlots: range(2500, end), sample: 'all' },
          ]);
          const decoded = new Float32Array(LONG_CHUNK * vocab);
          for (let i = 0; i < LONG_CHUNK; i++) {
            const position = LONG_PREFIX + i;
            const row = await logitsOf([
              { tokens: [prompt[position]], kvSlots: range(2500, position + 1), sample: 'all' },
            ]);
            decoded.set(row, i * vocab);
          }
          const span = valueRange(decoded);
          expect(span).toBeGreaterThan(0);
          expect(maxAbsDiff(chunk, decoded) / span).toBeLessThanOrEqual(TOLERANCE);
        });
      },
    );
  },
);
