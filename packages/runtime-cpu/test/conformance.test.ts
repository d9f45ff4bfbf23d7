import { describeExecutorConformance, type TinyModel, tinyModelsIn } from '@ferrum/models/testing';
import { BF16_PRODUCT_PATHS, loadNativeAddon } from '../src/native-addon.js';
import { repoTinyModels, sharedTinyModels } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();

/**
 * `ropeFrequencies`: the goldens of ../shared were made from a model cast with `.to(torch.bfloat16)`, which
 * also rounds transformers' `inv_freq` buffer to bf16 (an independent float64 numpy reference matches them
 * to 4e-7 of the logit range with rounded frequencies, and misses by up to 2e-3 without), so those run
 * with the runtime's bf16-frequency option; the repository's goldens use f32 frequencies like
 * `from_pretrained` does.
 */
const sources: { name: string; models: TinyModel[]; absent: string; ropeFrequencies: 'f32' | 'bf16' }[] = [
  {
    name: 'shared',
    models: tinyModelsIn(sharedTinyModels, 'shared'),
    absent: '../shared absent',
    ropeFrequencies: 'bf16',
  },
  {
    name: 'repository',
    models: tinyModelsIn(repoTinyModels, 'repo'),
    absent: 'fixtures/tiny-models absent',
    ropeFrequencies: 'f32',
  },
];

// The f32 CPU kernels stay within 1e-4 of transformers' range; the bf16-product paths round each projection's
// input to bf16, so they are held to the bf16 tolerance the CUDA runtime meets (2e-2 of the range) and not to
// transformers' f32 continuations. Every path gives the same rows to 1e-5 whatever the batch around them. The
// pool is widened to the conformance suite's slot layout.
for (const simd of addon.ok ? addon.addon.probe().usableSimd : [undefined]) {
  const bf16 = simd !== undefined && BF16_PRODUCT_PATHS.includes(simd);
  for (const source of sources) {
    describeExecutorConformance({
      label: `cpu conformance (${simd ?? 'no addon'}): ${source.name} fixtures`,
      models: source.models,
      skip: !addon.ok ? addon.reason : source.models.length === 0 ? source.absent : null,
      load: (dir, config) =>
        loadTinyModel(dir, config, { simd, maxKvTokens: 4096, ropeFrequencies: source.ropeFrequencies }),
      tolerances: { golden: bf16 ? 2e-2 : 1e-4, decodeRow: { absolute: 1e-5 }, batched: { absolute: 1e-5 } },
      chunkSizes: [1, 3, 16],
      greedyContinuation: !bf16,
    });
  }
}
