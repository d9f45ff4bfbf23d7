import type { ModelExecutor } from '@ferrum/interfaces';
import type { ModelConfig } from '@ferrum/types';
import { createCpuBackend } from '../src/index.js';
import type { CpuSimdPath } from '../src/native-addon.js';

export interface LoadOptions {
  readonly simd?: CpuSimdPath;
  readonly maxKvTokens?: number;
  readonly swapSpaceTokens?: number;
  readonly numThreads?: number;
  readonly ropeFrequencies?: 'f32' | 'bf16';
}

/** Loads a tiny checkpoint on the CPU backend with small test-sized pools. */
export function loadTinyModel(
  dir: string,
  config: ModelConfig,
  options: LoadOptions = {},
): Promise<ModelExecutor> {
  return createCpuBackend({ numThreads: options.numThreads ?? 2, simd: options.simd }).loadModel({
    modelDir: dir,
    config,
    loadFormat: 'safetensors',
    maxBatchTokens: 256,
    maxBatchSeqs: 8,
    maxKvTokens: options.maxKvTokens ?? 512,
    backendOptions: {
      swapSpaceTokens: options.swapSpaceTokens ?? 128,
      ropeFrequencies: options.ropeFrequencies ?? 'f32',
    },
  });
}
