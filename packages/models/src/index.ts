export { dtypeBytes } from './dtype-bytes.js';
export { expectedTensors, hasOutputProjectionBias } from './expected-tensors.js';
export { parseJsonObject } from './json-object.js';
export { loadModelConfig } from './load-model-config.js';
export { normalizeModelConfig } from './normalize-model-config.js';
export { dummyTensorSpecs, paramCount, weightBytes } from './param-count.js';
export { readSafetensorsHeader } from './read-safetensors-header.js';
export {
  readSafetensorsIndex,
  SHARDED_WEIGHTS_INDEX,
  SINGLE_WEIGHTS_FILE,
} from './read-safetensors-index.js';
export { resolveWeights } from './resolve-weights.js';
export type { TensorEntry, TensorSpec } from './tensor-entry.js';
