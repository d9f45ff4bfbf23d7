import type { ModelExecutor } from '@ferrum/interfaces';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';
import {
  buildBatch,
  type Golden,
  greedyRow,
  maxAbsDiff,
  range,
  readGolden,
  repoTinyModels,
  sharedTinyModels,
  tinyModelsIn,
  valueRange,
} from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const simdPaths = addon.ok ? addon.addon.probe().usableSimd : [];
const shared = tinyModelsIn(sharedTinyModels, 'shared');
const repo = tinyModelsIn(repoTinyModels, 'repo');
const GREEDY_STEPS = 24;

/**
 * Every prompt prefilled in one step with logits at every position, then 24 greedy decode steps.
 * `ropeFrequencies`: the goldens of ../shared were made from a model cast with `.to(torch.bfloat16)`, which
 * also rounds transformers' `inv_freq` buffer to bf16 (an independent float64 numpy reference matches them
 * to 4e-7 of the logit range with rounded frequencies, and misses by up to 2e-3 without), so those run
 * with the runtime's bf16-frequency option; the repository's goldens use f32 frequencies like
 * `from_pretrained` does.
 */
function goldenSuite(label: string, dir: string, ropeFrequencies: 'f32' | 'bf16') {
  describe.each(simdPaths)(`${label} (%s)`, (simd) => {
    let golden: Golden;
    let executor: ModelExecutor;
    beforeAll(async () => {
      golden = await readGolden(dir);
      executor = await loadTinyModel(dir, golden.config, { simd, ropeFrequencies });
    });
    afterAll(() => executor?.dispose());

    it('matches transformers logits at every prompt position', async () => {
      for (const [p, prompt] of golden.prompts.entries()) {
        const batch = buildBatch([{ tokens: prompt, kvSlots: range(0, prompt.length), sample: 'all' }]);
        const result = await executor.forward(batch);
        const expected = golden.logits[p];
        const tolerance = 1e-4 * valueRange(expected);
        expect(result.logits!.length).toBe(expected.length);
        expect(maxAbsDiff(result.logits!, expected), `prompt ${p}`).toBeLessThanOrEqual(tolerance);
      }
    });

    it('reproduces the greedy continuation through the KV pool', async () => {
      for (const [p, prompt] of golden.prompts.entries()) {
        // Each prompt gets its own slot range so stale entries of an earlier prompt cannot help.
        const base = p * 100;
        const slots = range(base, prompt.length);
        let result = await executor.forward(
          buildBatch([{ tokens: prompt, kvSlots: slots, sample: 'last' }], greedyRow),
        );
        const generated: number[] = [];
        for (let step = 0; step < GREEDY_STEPS; step++) {
          const token = result.tokens[0];
          generated.push(token);
          if (step === GREEDY_STEPS - 1) break;
          slots.push(base + slots.length);
          result = await executor.forward(
            buildBatch([{ tokens: [token], kvSlots: slots, sample: 'last' }], greedyRow),
          );
        }
        expect(generated, `prompt ${p}`).toEqual(golden.greedy[p]);
      }
    });
  });
}

describe.skipIf(!addon.ok)('golden logits and greedy decoding', () => {
  describe.skipIf(shared.length === 0)(
    `shared fixtures${shared.length === 0 ? ' (skipped: ../shared absent)' : ''}`,
    () => {
      for (const model of shared) goldenSuite(model.label, model.dir, 'bf16');
    },
  );
  describe.skipIf(repo.length === 0)(
    `repository fixtures${repo.length === 0 ? ' (skipped: fixtures/tiny-models absent)' : ''}`,
    () => {
      for (const model of repo) goldenSuite(model.label, model.dir, 'f32');
    },
  );
});
