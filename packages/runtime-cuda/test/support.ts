import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelExecutor } from '@ferrum/interfaces';
import { type TinyModel, tinyModelsIn } from '@ferrum/models/testing';
import type { ModelConfig } from '@ferrum/types';
import { createCudaBackend } from '../src/index.js';

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

/** Loads a checkpoint on the CUDA backend with test-sized pools. */
export function loadCuda(
  dir: string,
  config: ModelConfig,
  backendOptions: Record<string, unknown> = {},
): Promise<ModelExecutor> {
  return createCudaBackend().loadModel({
    modelDir: dir,
    config,
    loadFormat: 'safetensors',
    maxKvTokens: 4096,
    maxBatchTokens: 512,
    maxBatchSeqs: 16,
    backendOptions: { maxSampleRows: 512, swapSpaceTokens: 1024, ...backendOptions },
  });
}

/** Whether the CUDA backend can run here, and why not. */
export async function cudaAvailability(): Promise<{ available: boolean; reason: string }> {
  const capabilities = await createCudaBackend().probe();
  return { available: capabilities.available, reason: capabilities.reason ?? capabilities.device };
}
