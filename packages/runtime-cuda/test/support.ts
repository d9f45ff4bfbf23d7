import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type TinyModel, tinyModelsIn } from '@ferrum/models/testing';
import { createCudaBackend } from '../src/index.js';

export { loadCuda } from './load-cuda.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..', '..');

/**
 * Tiny checkpoints with transformers goldens: FERRUM_TINY_MODELS (the GPU machine gets a carried copy),
 * else the repo's fixtures/tiny-models, plus ../shared's when present.
 */
export function tinyModels(): TinyModel[] {
  const env = process.env.FERRUM_TINY_MODELS;
  if (env) return tinyModelsIn(env, 'env');
  return [
    ...tinyModelsIn(path.join(repoRoot, 'fixtures', 'tiny-models'), 'repo'),
    ...tinyModelsIn(path.resolve(repoRoot, '..', 'shared', 'fixtures', 'tiny-models'), 'shared'),
  ];
}

/** Whether the CUDA backend can run here, and why not. */
export async function cudaAvailability(): Promise<{ available: boolean; reason: string }> {
  const capabilities = await createCudaBackend().probe();
  return { available: capabilities.available, reason: capabilities.reason ?? capabilities.device };
}
