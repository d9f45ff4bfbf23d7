// loadCuda apart from support.ts: support reads tiny models through @ferrum/models/testing, which needs vitest,
// and gpu-contender.ts runs outside it.
import type { ModelExecutor } from '@ferrum/interfaces';
import type { LoadFormat, ModelConfig } from '@ferrum/types';
import { createCudaBackend } from '../src/index.js';

/** Tokens a step of a loadCuda executor holds at most. */
export const TEST_MAX_BATCH_TOKENS = 512;

/**
 * Loads a checkpoint (or `dummy` weights, seeded, for a directory holding only config.json) with test-sized pools:
 * 4,096 KV tokens unless `maxKvTokens` says more.
 */
export function loadCuda(
  dir: string,
  config: ModelConfig,
  backendOptions: Record<string, unknown> = {},
  loadFormat: LoadFormat = 'safetensors',
  maxKvTokens = 4096,
): Promise<ModelExecutor> {
  return createCudaBackend().loadModel({
    modelDir: dir,
    config,
    loadFormat,
    seed: 3,
    maxKvTokens,
    maxBatchTokens: TEST_MAX_BATCH_TOKENS,
    maxBatchSeqs: 16,
    backendOptions: { maxSampleRows: 512, swapSpaceTokens: 1024, ...backendOptions },
  });
}
