export {
  applyAllowedTokenIds,
  applyBannedTokenIds,
  applyLogitBias,
  applyMinTokens,
} from './apply-token-masks.js';
export { createSampler, type SamplerOptions } from './create-sampler.js';
export { PenaltyApplier } from './penalty-applier.js';
export { argmax, logSumExp, maxOf } from './row-reductions.js';
export { seededUniform } from './seeded-uniform.js';
export { TopNSelector } from './top-n-selector.js';
export { TruncatedDistribution, type TruncatedDistributionOptions } from './truncated-distribution.js';
export { type SamplingParamsLimits, validateSamplingParams } from './validate-sampling-params.js';
