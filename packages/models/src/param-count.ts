import type { DType, ModelConfig } from '@ferrum/types';
import { dtypeBytes } from './dtype-bytes.js';
import { expectedTensors } from './expected-tensors.js';
import type { TensorSpec } from './tensor-entry.js';

/**
 * Number of parameters of a model of this config, embeddings included and a tied `lm_head` counted once
 * (the convention of `sum(p.numel() for p in model.parameters())` in PyTorch).
 */
export function paramCount(config: ModelConfig): number {
  let total = 0;
  for (const spec of expectedTensors(config)) total += spec.shape.reduce((product, dim) => product * dim, 1);
  return total;
}

/** Bytes of all weights held in `dtype`: the memory a forward pass streams at least once (roofline floor). */
export function weightBytes(config: ModelConfig, dtype: DType): number {
  return paramCount(config) * dtypeBytes(dtype);
}

/**
 * The tensors `loadFormat: "dummy"` must create: exactly {@link expectedTensors} (runtimes fill them
 * natively from the seed, so JS produces names and shapes only).
 */
export function dummyTensorSpecs(config: ModelConfig): TensorSpec[] {
  return expectedTensors(config);
}
