import type { ModelExecutor } from '@ferrum/interfaces';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildBatch,
  cudaAvailability,
  type Golden,
  greedyRow,
  loadCuda,
  maxAbsDiff,
  prefillAll,
  range,
  readGolden,
  type SeqStep,
  tinyModels,
  valueRange,
} from './support.js';

const { available, reason } = await cudaAvailability();
const models = tinyModels();
/** bf16 tolerance of the issue: max abs error ≤ 2e-2 × the logit range. */
const BF16_FRACTION = 2e-2;
/** Same rows through different kernel paths (prefill tiles vs decode rows, GEMV vs cuBLASLt at different
 * row counts): f32 sums in another order round an occasional bf16 activation one ulp apart (measured up to
 * 3.1e-3 × range on these fixtures). Paths that share kernels are held to 1e-3. */
const CROSS_PATH_FRACTION = 5e-3;

describe.skipIf(!available || models.length === 0)(
  `cuda: tiny fixtures against transformers${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(models.map((m) => [m.label, m.dir] as const))('%s', (_label, dir) => {
      let golden: Golden;
      let executor: ModelExecutor;
      let alone: Float32Array[];
      beforeAll(async () => {
        golden = await readGolden(dir);
        executor = await loadCuda(dir, golden.config);
        alone = [];
        for (const prompt of golden.prompts) alone.push(await prefillAll(executor, prompt, 0));
      });
      afterAll(() => executor?.dispose());

      it('matches the golden logits at every position within bf16 tolerance', () => {
        for (const [p, want] of golden.logits.entries()) {
          const error = maxAbsDiff(alone[p], want);
          expect(error, `prompt ${p}: max abs error vs range ${valueRange(want)}`).toBeLessThanOrEqual(
            BF16_FRACTION * valueRange(want),
          );
        }
      });

      it("picks transformers' argmax wherever its top-2 margin exceeds 1% of the range", () => {
        const vocab = golden.config.vocabSize;
        let checked = 0;
        for (const [p, want] of golden.logits.entries()) {
          const limit = 0.01 * valueRange(want);
          for (let row = 0; row < want.length / vocab; row++) {
            const ref = want.subarray(row * vocab, (row + 1) * vocab);
            const [first, second] = topTwo(ref);
            if (ref[first] - ref[second] <= limit) continue;
            expect(argmax(alone[p].subarray(row * vocab, (row + 1) * vocab)), `prompt ${p} row ${row}`).toBe(
              first,
            );
            checked++;
          }
        }
        expect(checked).toBeGreaterThan(0);
      });

      it('reproduces the prefill logits when the prompt is decoded one token at a time', async () => {
        const p = golden.prompts.length - 1;
        const prompt = golden.prompts[p];
        const vocab = golden.config.vocabSize;
        for (let i = 0; i < prompt.length; i++) {
          const step: SeqStep = { tokens: [prompt[i]], kvSlots: range(1000, i + 1), sample: 'last' };
          const { logits } = await executor.forward(buildBatch([step]));
          const want = alone[p].subarray(i * vocab, (i + 1) * vocab);
          expect(maxAbsDiff(logits!, want), `position ${i}`).toBeLessThanOrEqual(
            CROSS_PATH_FRACTION * valueRange(want),
          );
        }
      });

      it('samples greedily on the device: the argmax of the logits it computes', async () => {
        const steps = golden.prompts.map((prompt, p) => ({
          tokens: prompt,
          kvSlots: range(p * 100, prompt.length),
          sample: 'all' as const,
        }));
        const { tokens, logprobs } = await executor.forward(buildBatch(steps, greedyRow));
        const vocab = golden.config.vocabSize;
        const all = alone.flatMap((rows) =>
          Array.from({ length: rows.length / vocab }, (_, r) => rows.subarray(r * vocab, (r + 1) * vocab)),
        );
        expect(tokens.length).toBe(all.length);
        for (const [i, row] of all.entries()) {
          const [first, second] = topTwo(row);
          if (row[first] - row[second] > 1e-3 * valueRange(row)) expect(tokens[i], `row ${i}`).toBe(first);
          expect(logprobs![i], `row ${i} raw logprob`).toBeCloseTo(row[tokens[i]] - logSumExp(row), 2);
        }
      });

      it('gives every prompt the same logits in one flattened batch', async () => {
        const steps = golden.prompts.map((prompt, p) => ({
          tokens: prompt,
          kvSlots: range(p * 100, prompt.length),
          sample: 'all' as const,
        }));
        const { logits } = await executor.forward(buildBatch(steps));
        const vocab = golden.config.vocabSize;
        let row = 0;
        for (const [p, prompt] of golden.prompts.entries()) {
          const rows = logits!.subarray(row * vocab, (row + prompt.length) * vocab);
          expect(maxAbsDiff(rows, alone[p]), `prompt ${p}`).toBeLessThanOrEqual(1e-3 * valueRange(alone[p]));
          row += prompt.length;
        }
      });

      it.each([1, 5, 16])(
        'gives the same logits when the prompt is prefilled in chunks of %i',
        async (chunk) => {
          const longest = golden.prompts[golden.prompts.length - 1];
          const expected = alone[golden.prompts.length - 1];
          const vocab = golden.config.vocabSize;
          for (let start = 0; start < longest.length; start += chunk) {
            const tokens = longest.slice(start, start + chunk);
            const other = golden.prompts[(start / chunk) % golden.prompts.length];
            const bystander: SeqStep = { tokens: other, kvSlots: range(2000, other.length), sample: 'last' };
            const step: SeqStep = { tokens, kvSlots: range(3000, start + tokens.length), sample: 'all' };
            const first = start % 2 === 0;
            const { logits } = await executor.forward(
              buildBatch(first ? [bystander, step] : [step, bystander]),
            );
            const rows = first ? logits!.subarray(vocab) : logits!.subarray(0, tokens.length * vocab);
            const want = expected.subarray(start * vocab, (start + tokens.length) * vocab);
            // Chunks of one token are decode rows; longer chunks run the prefill kernel like the whole prompt.
            const tolerance = chunk === 1 ? CROSS_PATH_FRACTION : 1e-3;
            expect(maxAbsDiff(rows, want), `chunk at ${start}`).toBeLessThanOrEqual(
              tolerance * valueRange(want),
            );
          }
        },
      );
    });
  },
);

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

function topTwo(row: Float32Array): [number, number] {
  let first = 0;
  let second = -1;
  for (let i = 1; i < row.length; i++) {
    if (row[i] > row[first]) {
      second = first;
      first = i;
    } else if (second < 0 || row[i] > row[second]) {
      second = i;
    }
  }
  return [first, second];
}

function logSumExp(row: Float32Array): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const value of row) max = Math.max(max, value);
  let sum = 0;
  for (const value of row) sum += Math.exp(value - max);
  return max + Math.log(sum);
}
