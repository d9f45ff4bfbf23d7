import { freemem } from 'node:os';
import { expectedTensors, resolveWeights } from '@ferrum/models';
import { FerrumError, type ModelLoadSpec } from '@ferrum/types';
import { defaultHostSlots, defaultKvSlots } from './kv-slots.js';
import {
  CPU_SIMD_PATHS,
  type CpuSimdPath,
  type NativeLoadOptions,
  type NativeTensor,
} from './native-addon.js';

/** Defaults the backend adds to every spec (see {@link CpuBackendOptions}). */
export interface LoadDefaults {
  readonly numThreads: number;
  readonly simd: CpuSimdPath | '';
}

/**
 * Everything the addon needs to load `spec`: the tensor list (from the checkpoint's headers, or names and
 * shapes only for dummy weights), pool sizes and threading. Reads safetensors headers, never tensor data.
 *
 * The compute dtype: `spec.dtype: 'bf16'` multiplies bf16 weights as bf16 products (`amx` or `avx512bf16`, where the
 * CPU has them); otherwise, and by default, products are f32.
 *
 * `backendOptions` understood: `swapSpaceTokens` (host tier size in tokens), `simd` (force a path),
 * `ropeFrequencies: 'bf16'` (round RoPE inverse frequencies to bf16 like transformers after
 * `model.to(torch.bfloat16)`, to compare with references made that way; default 'f32').
 */
export async function nativeLoadOptions(
  spec: ModelLoadSpec,
  defaults: LoadDefaults,
): Promise<NativeLoadOptions> {
  const { config } = spec;
  positiveInteger(spec.maxBatchTokens, 'maxBatchTokens');
  positiveInteger(spec.maxBatchSeqs, 'maxBatchSeqs');
  if (spec.maxKvTokens !== undefined) positiveInteger(spec.maxKvTokens, 'maxKvTokens');
  const numSlots = spec.maxKvTokens ?? defaultKvSlots(config, freemem());
  const swapSpace = spec.backendOptions?.swapSpaceTokens;
  if (swapSpace !== undefined && (!Number.isInteger(swapSpace) || (swapSpace as number) < 0)) {
    throw new FerrumError(
      'invalid_argument',
      `backendOptions.swapSpaceTokens must be a non-negative integer`,
    );
  }
  const simd = spec.backendOptions?.simd ?? defaults.simd;
  if (typeof simd !== 'string' || (simd !== '' && !(CPU_SIMD_PATHS as readonly string[]).includes(simd))) {
    throw new FerrumError(
      'invalid_argument',
      `backendOptions.simd must be one of ${CPU_SIMD_PATHS.join(', ')}`,
    );
  }
  const ropeFrequencies = spec.backendOptions?.ropeFrequencies ?? 'f32';
  if (ropeFrequencies !== 'f32' && ropeFrequencies !== 'bf16') {
    throw new FerrumError('invalid_argument', `backendOptions.ropeFrequencies must be 'f32' or 'bf16'`);
  }
  return {
    config,
    tensors: await tensorsOf(spec),
    dummy: spec.loadFormat === 'dummy',
    seed: spec.seed ?? 0,
    numSlots,
    numHostSlots: (swapSpace as number | undefined) ?? defaultHostSlots(config, numSlots),
    maxBatchTokens: spec.maxBatchTokens,
    maxBatchSeqs: spec.maxBatchSeqs,
    numThreads: spec.numThreads !== undefined && spec.numThreads > 0 ? spec.numThreads : defaults.numThreads,
    simd: simd as CpuSimdPath | '',
    bf16Products: spec.dtype === 'bf16',
    ropeBf16Frequencies: ropeFrequencies === 'bf16',
  };
}

async function tensorsOf(spec: ModelLoadSpec): Promise<NativeTensor[]> {
  if (spec.loadFormat === 'dummy') {
    const dtype = spec.dtype ?? spec.config.dtype;
    return expectedTensors(spec.config).map(({ name, shape }) => ({ name, shape, dtype }));
  }
  // Weights stay in their checkpoint dtype: the kernels widen bf16/f16 on the fly, or take bf16 as it is.
  return resolveWeights(spec.modelDir, spec.config);
}

function positiveInteger(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new FerrumError('invalid_argument', `${name} must be a positive integer, got ${value}`);
  }
}
