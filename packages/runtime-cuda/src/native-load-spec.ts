import { resolveWeights } from '@ferrum/models';
import { FerrumError, type ModelLoadSpec } from '@ferrum/types';
import { roundToBf16 } from './bf16.js';
import type { NativeLoadSpec } from './native-addon.js';
import { ropeInverseFrequencies } from './rope-frequencies.js';
import { dummyFills, tensorLoads, weightLayout } from './weight-layout.js';

/** Host swap tier when `backendOptions.swapSpaceTokens` is absent (vLLM's default swap_space), capped at the pool. */
export const DEFAULT_SWAP_SPACE_BYTES = 4 * 2 ** 30;
const EMPTY = new Float64Array(0);

/**
 * Everything the addon needs to load `spec`: the arena layout, the byte ranges of checkpoint tensors (read
 * from safetensors headers, never the data) or the dummy fills, and the pool and workspace sizes.
 *
 * `backendOptions` understood: `swapSpaceTokens` (host tier, tokens), `maxSampleRows` (sampled rows per step;
 * default maxBatchSeqs), `device` (CUDA device index), `ropeFrequencies: 'bf16'` (round RoPE inverse
 * frequencies to bf16, as transformers holds them after `model.to(torch.bfloat16)`; default 'f32'),
 * `enforceEager` (true: no decode CUDA graphs; the engine passes its `enforceEager` option here), `spinWait`
 * (false: host threads sleep while steps run instead of polling; default: polling unless the environment sets
 * FERRUM_CUDA_SPIN_WAIT=0; native/host-spin.h).
 */
export async function nativeLoadSpec(spec: ModelLoadSpec, defaultDevice: number): Promise<NativeLoadSpec> {
  const { config } = spec;
  const options = spec.backendOptions ?? {};
  positiveInteger(spec.maxBatchTokens, 'maxBatchTokens');
  positiveInteger(spec.maxBatchSeqs, 'maxBatchSeqs');
  if (spec.maxKvTokens !== undefined) positiveInteger(spec.maxKvTokens, 'maxKvTokens');
  const utilization = spec.gpuMemoryUtilization ?? 0.9;
  if (!(utilization > 0 && utilization <= 1)) {
    throw new FerrumError('invalid_argument', `gpuMemoryUtilization must be in (0, 1], got ${utilization}`);
  }
  const maxSampleRows =
    optionalInteger(options.maxSampleRows, 'backendOptions.maxSampleRows') ?? spec.maxBatchSeqs;
  const swapTokens = optionalInteger(options.swapSpaceTokens, 'backendOptions.swapSpaceTokens');
  const device = optionalInteger(options.device, 'backendOptions.device') ?? defaultDevice;
  const ropeFrequencies = options.ropeFrequencies ?? 'f32';
  if (ropeFrequencies !== 'f32' && ropeFrequencies !== 'bf16') {
    throw new FerrumError('invalid_argument', `backendOptions.ropeFrequencies must be 'f32' or 'bf16'`);
  }
  const layout = weightLayout(config);
  const dummy = spec.loadFormat === 'dummy';
  const { files, loads } = dummy
    ? { files: [] as string[], loads: EMPTY }
    : tensorLoads(layout, await resolveWeights(spec.modelDir, config));
  const invFreq = ropeInverseFrequencies(config.rope, config.headDim);
  if (ropeFrequencies === 'bf16')
    for (let i = 0; i < invFreq.length; i++) invFreq[i] = roundToBf16(invFreq[i]);
  const slotBytes = 2 * config.numLayers * config.numKvHeads * config.headDim * 2;
  return {
    shape: {
      vocabSize: config.vocabSize,
      hiddenSize: config.hiddenSize,
      intermediateSize: config.intermediateSize,
      numLayers: config.numLayers,
      numHeads: config.numHeads,
      numKvHeads: config.numKvHeads,
      headDim: config.headDim,
      rmsNormEps: config.rmsNormEps,
      attentionBias: config.attentionBias,
      qkNorm: config.qkNorm,
      tieWordEmbeddings: config.tieWordEmbeddings,
    },
    maxPositionEmbeddings: config.maxPositionEmbeddings,
    invFreq,
    arenaBytes: layout.arenaBytes,
    embedOffset: layout.embedOffset,
    finalNormOffset: layout.finalNormOffset,
    lmHeadOffset: layout.lmHeadOffset,
    layerOffsets: layout.layerOffsets,
    files,
    loads,
    fills: dummy ? dummyFills(layout) : EMPTY,
    seed: spec.seed ?? 0,
    maxBatchTokens: spec.maxBatchTokens,
    maxBatchSeqs: spec.maxBatchSeqs,
    maxSampleRows,
    maxKvTokens: spec.maxKvTokens ?? 0,
    gpuMemoryUtilization: utilization,
    hostKvBytes: swapTokens !== undefined ? swapTokens * slotBytes : DEFAULT_SWAP_SPACE_BYTES,
    device,
    enforceEager: options.enforceEager === true,
    spinWait:
      optionalBoolean(options.spinWait, 'backendOptions.spinWait') ??
      process.env.FERRUM_CUDA_SPIN_WAIT !== '0',
  };
}

function positiveInteger(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new FerrumError('invalid_argument', `${name} must be a positive integer, got ${value}`);
  }
}

function optionalInteger(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new FerrumError('invalid_argument', `${name} must be a non-negative integer`);
  }
  return value;
}

function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') throw new FerrumError('invalid_argument', `${name} must be true or false`);
  return value;
}
