import type { ModelExecutor } from '@ferrum/interfaces';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';
import {
  allTinyModels,
  buildBatch,
  type Golden,
  maxAbsDiff,
  range,
  readGolden,
  type SeqStep,
} from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const simdPaths = addon.ok ? addon.addon.probe().usableSimd : [];
const models = allTinyModels();
const TOLERANCE = 1e-5;

/** Logits of every position of `prompt`, prefilled alone in one step at slots [base, base + length). */
async function alone(executor: ModelExecutor, prompt: number[], base: number): Promise<Float32Array> {
  const result = await executor.forward(
    buildBatch([{ tokens: prompt, kvSlots: range(base, prompt.length), sample: 'all' }]),
  );
  return result.logits!;
}

describe.skipIf(!addon.ok || models.length === 0)('batch invariance', () => {
  describe.each(models.flatMap((model) => simdPaths.map((simd) => [model.label, model.dir, simd] as const)))(
    '%s (%s)',
    (_label, dir, simd) => {
      let golden: Golden;
      let executor: ModelExecutor;
      let reference: Float32Array[];
      beforeAll(async () => {
        golden = await readGolden(dir);
        executor = await loadTinyModel(dir, golden.config, { simd });
        reference = [];
        for (const prompt of golden.prompts) reference.push(await alone(executor, prompt, 0));
      });
      afterAll(() => executor?.dispose());

      it('gives every prompt the same logits when all run in one flattened batch', async () => {
        const steps = golden.prompts.map((prompt, p) => ({
          tokens: prompt,
          kvSlots: range(p * 64, prompt.length),
          sample: 'all' as const,
        }));
        const { logits } = await executor.forward(buildBatch(steps));
        const vocab = golden.config.vocabSize;
        let row = 0;
        for (const [p, prompt] of golden.prompts.entries()) {
          const rows = logits!.subarray(row * vocab, (row + prompt.length) * vocab);
          expect(maxAbsDiff(rows, reference[p]), `prompt ${p}`).toBeLessThanOrEqual(TOLERANCE);
          row += prompt.length;
        }
      });

      it.each([1, 3, 16])(
        'gives the same logits when the prompt is prefilled in chunks of %i',
        async (chunk) => {
          const longest = golden.prompts.reduce((a, b) => (b.length > a.length ? b : a));
          const expected = reference[golden.prompts.indexOf(longest)];
          const vocab = golden.config.vocabSize;
          const base = 300;
          for (let start = 0; start < longest.length; start += chunk) {
            const tokens = longest.slice(start, start + chunk);
            // A bystander of changing length shares every step, so each chunk runs in a different batch.
            const other = golden.prompts[(start / chunk) % golden.prompts.length];
            const bystander: SeqStep = { tokens: other, kvSlots: range(0, other.length), sample: 'last' };
            const step: SeqStep = { tokens, kvSlots: range(base, start + tokens.length), sample: 'all' };
            const { logits } = await executor.forward(
              buildBatch(start % 2 === 0 ? [bystander, step] : [step, bystander]),
            );
            const rows =
              start % 2 === 0 ? logits!.subarray(vocab) : logits!.subarray(0, tokens.length * vocab);
            const want = expected.subarray(start * vocab, (start + tokens.length) * vocab);
            expect(maxAbsDiff(rows, want), `chunk at ${start}`).toBeLessThanOrEqual(TOLERANCE);
          }
        },
      );
    },
  );
});
