// loadCuda apart from support.ts: support reads tiny models through @ferrum/models/testing, which needs vitest,
// and gpu-contender.ts runs outside it.
import type { ModelExecutor } from '@ferrum/interfaces';
import type { ModelConfig } from '@ferrum/types';
import { createCudaBackend } from '../src/index.js';

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
