// The decode kernel's two chunk lengths for 128-dim heads (kernels/attention.cu, chunkEntries): a launch of few rows
// cuts each row into 8 or more kv splits and walks them in half chunks (32 entries), one of many rows takes fewer
// splits and whole chunks (64). Each sequence's decode row alone (one row: many splits) must give the logits it gives
// in a step of 16 rows (16 × 8 kv heads: under 8 splits on GPUs of fewer than 256 multiprocessors), within the
// cross-path tolerance of the prefill-attention suite (the two steps' products round alike only up to their row
// counts).
import type { ModelExecutor } from '@ferrum/interfaces';
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, maxAbsDiff, range, type SeqStep, valueRange } from '@ferrum/models/testing';
import { seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cudaAvailability, dummyQwen3Dir, loadCuda, prefillInSteps } from './support.js';

const { available, reason } = await cudaAvailability();

const SEQUENCES = 16; // loadCuda's maxBatchSeqs
// On the H100 (132 multiprocessors), at 1,101 entries a row alone takes 18 splits of 64 entries (two half chunks
// each) and the 16-row step 4 splits of 288 (four and a half whole chunks).
const CONTEXT = 1100;
const STRIDE = 1152; // slots of a sequence
const TOLERANCE = 5e-3; // of the logit range, as the prefill-attention suite's cross-path checks

describe.skipIf(!available)(
  `cuda: decode rows alone (half chunks) equal the same rows in a 16-row step (whole chunks)${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    // Two heads a kv head and four: the kernels that take 128-dim heads in two chunk lengths.
    describe.each([
      { heads: 16, kvHeads: 8 },
      { heads: 32, kvHeads: 8 },
    ])('head dim 128, $heads heads, $kvHeads kv heads', ({ heads, kvHeads }) => {
      let executor: ModelExecutor;
      let vocab = 0;
      const prompts: number[][] = [];
      beforeAll(async () => {
        const dir = dummyQwen3Dir(128, heads, kvHeads);
        const config = await loadModelConfig(dir);
        vocab = config.vocabSize;
        executor = await loadCuda(dir, config, { enforceEager: true }, 'dummy', SEQUENCES * STRIDE);
        const random = seededRandom(17);
        for (let s = 0; s < SEQUENCES; s++) {
          prompts.push(Array.from({ length: CONTEXT + 1 }, () => Math.floor(random() * vocab)));
          await prefillInSteps(executor, prompts[s].slice(0, CONTEXT), s * STRIDE);
        }
      });
      afterAll(async () => {
        await executor?.dispose();
      });

      const decodeRow = (s: number): SeqStep => ({
        tokens: [prompts[s][CONTEXT]],
        kvSlots: range(s * STRIDE, CONTEXT + 1),
        sample: 'all',
      });
      const logitsOf = async (steps: SeqStep[]) => {
        const result = await executor.forward(buildBatch(steps));
        if (!result.logits) throw new Error('no logits returned');
        return result.logits;
      };

      it('gives each row the same logits', async () => {
        const together = await logitsOf(Array.from({ length: SEQUENCES }, (_, s) => decodeRow(s)));
        expect(together.length).toBe(SEQUENCES * vocab);
        const alone = new Float32Array(SEQUENCES * vocab);
        // Each row again by itself: it rewrites its new entry's K and V with the values of a one-row product.
        for (let s = 0; s < SEQUENCES; s++) alone.set(await logitsOf([decodeRow(s)]), s * vocab);
        const span = valueRange(alone);
        expect(span).toBeGreaterThan(0);
        expect(maxAbsDiff(together, alone) / span).toBeLessThanOrEqual(TOLERANCE);
      });
    });
  },
);
