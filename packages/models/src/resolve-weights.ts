import type { ModelConfig } from '@ferrum/types';
import { FerrumError } from '@ferrum/types';
import { expectedTensors } from './expected-tensors.js';
import { readSafetensorsIndex } from './read-safetensors-index.js';
import type { TensorEntry } from './tensor-entry.js';

/**
 * Finds every tensor of {@link expectedTensors} in the checkpoint of `modelDir` and checks its shape.
 * Returns the entries in `expectedTensors` order; tensors the model does not use (e.g. `lm_head.weight` of
 * a tied model, rotary buffers) are ignored. Dtypes may differ between tensors; runtimes convert.
 *
 * @throws FerrumError `missing_tensor` (naming the tensor and the files searched), `shape_mismatch`
 *   (naming tensor, file, expected and actual shapes), and what {@link readSafetensorsIndex} throws.
 */
export async function resolveWeights(modelDir: string, config: ModelConfig): Promise<TensorEntry[]> {
  const tensors = await readSafetensorsIndex(modelDir);
  return expectedTensors(config).map((spec) => {
    const entry = tensors.get(spec.name);
    if (entry === undefined) {
      const files = [...new Set([...tensors.values()].map((tensor) => tensor.file))];
      throw new FerrumError('missing_tensor', `tensor ${spec.name} not found in ${files.join(', ')}`, {
        details: { tensor: spec.name, files },
      });
    }
    if (!sameShape(entry.shape, spec.shape)) {
      throw new FerrumError(
        'shape_mismatch',
        `tensor ${spec.name} in ${entry.file} has shape [${entry.shape.join(', ')}], expected [${spec.shape.join(', ')}]`,
        { details: { tensor: spec.name, file: entry.file, expected: spec.shape, actual: entry.shape } },
      );
    }
    return entry;
  });
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === b[i]);
}
