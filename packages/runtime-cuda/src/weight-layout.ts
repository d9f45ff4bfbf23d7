import type { TensorEntry } from '@ferrum/models';
import { type DType, FerrumError, type ModelConfig } from '@ferrum/types';

/** Per-layer tensors of the arena, in the order native/model-runner.h's LayerOffsets declares them. */
export const LAYER_FIELDS = [
  'qkvW',
  'qkvBias',
  'oW',
  'oBias',
  'qNorm',
  'kNorm',
  'inNorm',
  'postNorm',
  'gateUpW',
  'downW',
] as const;
type LayerField = (typeof LAYER_FIELDS)[number];

/** How a region is initialized for dummy weights. */
export type DummyInit = 'random' | 'one' | 'zero';

/** One bf16 region of the arena. */
export interface WeightRegion {
  readonly offset: number;
  readonly numElements: number;
  readonly init: DummyInit;
}

/**
 * Where every weight lives in the runtime's single bf16 device arena. q/k/v are fused into one [q|k|v]
 * matrix and gate/up into one [gate|up] matrix (row-major [out, in], so fusing is appending rows), so a
 * layer runs two GEMMs where the checkpoint has five.
 */
export interface WeightLayout {
  readonly arenaBytes: number;
  readonly embedOffset: number;
  readonly finalNormOffset: number;
  /** -1 when tied to the embedding. */
  readonly lmHeadOffset: number;
  /** numLayers × LAYER_FIELDS.length byte offsets; -1 for tensors the model lacks. */
  readonly layerOffsets: Float64Array;
  /** Hugging Face tensor name → byte offset of its first element in the arena. */
  readonly destinations: ReadonlyMap<string, number>;
  readonly regions: readonly WeightRegion[];
}

const ALIGN_BYTES = 256;
/** Uniform weights in [-s, s) with s = 0.02·√3 have transformers' initializer std 0.02. */
const DUMMY_SCALE = 0.02 * Math.sqrt(3);
const DTYPE_CODES: Readonly<Record<DType, number>> = { bf16: 0, f16: 1, f32: 2 };
const DTYPE_BYTES: Readonly<Record<DType, number>> = { bf16: 2, f16: 2, f32: 4 };

/** Compute the arena layout of `config`. Pure. */
export function weightLayout(config: ModelConfig): WeightLayout {
  const { hiddenSize: h, intermediateSize: inter, headDim: d, vocabSize: vocab } = config;
  const qDim = config.numHeads * d;
  const kvDim = config.numKvHeads * d;
  const regions: WeightRegion[] = [];
  const destinations = new Map<string, number>();
  let next = 0;
  const region = (numElements: number, init: DummyInit): number => {
    const offset = next;
    regions.push({ offset, numElements, init });
    next += Math.ceil((numElements * 2) / ALIGN_BYTES) * ALIGN_BYTES;
    return offset;
  };
  const embedOffset = region(vocab * h, 'random');
  destinations.set('model.embed_tokens.weight', embedOffset);
  const layerOffsets = new Float64Array(config.numLayers * LAYER_FIELDS.length).fill(-1);
  const outputBias = config.attentionBias && config.architecture !== 'qwen2';
  for (let layer = 0; layer < config.numLayers; layer++) {
    const set = (field: LayerField, offset: number) => {
      layerOffsets[layer * LAYER_FIELDS.length + LAYER_FIELDS.indexOf(field)] = offset;
    };
    const attention = `model.layers.${layer}.self_attn`;
    const mlp = `model.layers.${layer}.mlp`;
    const qkv = region((qDim + 2 * kvDim) * h, 'random');
    set('qkvW', qkv);
    destinations.set(`${attention}.q_proj.weight`, qkv);
    destinations.set(`${attention}.k_proj.weight`, qkv + qDim * h * 2);
    destinations.set(`${attention}.v_proj.weight`, qkv + (qDim + kvDim) * h * 2);
    if (config.attentionBias) {
      const bias = region(qDim + 2 * kvDim, 'zero');
      set('qkvBias', bias);
      destinations.set(`${attention}.q_proj.bias`, bias);
      destinations.set(`${attention}.k_proj.bias`, bias + qDim * 2);
      destinations.set(`${attention}.v_proj.bias`, bias + (qDim + kvDim) * 2);
    }
    const named = (field: LayerField, name: string, numElements: number, init: DummyInit) => {
      const offset = region(numElements, init);
      set(field, offset);
      destinations.set(name, offset);
    };
    named('oW', `${attention}.o_proj.weight`, h * qDim, 'random');
    if (outputBias) named('oBias', `${attention}.o_proj.bias`, h, 'zero');
    if (config.qkNorm) {
      named('qNorm', `${attention}.q_norm.weight`, d, 'one');
      named('kNorm', `${attention}.k_norm.weight`, d, 'one');
    }
    named('inNorm', `model.layers.${layer}.input_layernorm.weight`, h, 'one');
    named('postNorm', `model.layers.${layer}.post_attention_layernorm.weight`, h, 'one');
    const gateUp = region(2 * inter * h, 'random');
    set('gateUpW', gateUp);
    destinations.set(`${mlp}.gate_proj.weight`, gateUp);
    destinations.set(`${mlp}.up_proj.weight`, gateUp + inter * h * 2);
    named('downW', `${mlp}.down_proj.weight`, h * inter, 'random');
  }
  const finalNormOffset = region(h, 'one');
  destinations.set('model.norm.weight', finalNormOffset);
  let lmHeadOffset = -1;
  if (!config.tieWordEmbeddings) {
    lmHeadOffset = region(vocab * h, 'random');
    destinations.set('lm_head.weight', lmHeadOffset);
  }
  return {
    arenaBytes: next,
    embedOffset,
    finalNormOffset,
    lmHeadOffset,
    layerOffsets,
    destinations,
    regions,
  };
}

/** The native load list for checkpoint tensors: per tensor [file index, offset, bytes, dtype, arena offset]. */
export function tensorLoads(
  layout: WeightLayout,
  entries: readonly TensorEntry[],
): { files: string[]; loads: Float64Array } {
  const files: string[] = [];
  const fileIndex = new Map<string, number>();
  const loads = new Float64Array(entries.length * 5);
  entries.forEach((entry, i) => {
    const destination = layout.destinations.get(entry.name);
    if (destination === undefined) {
      throw new FerrumError('invalid_checkpoint', `runtime-cuda has no place for tensor ${entry.name}`, {
        details: { tensor: entry.name },
      });
    }
    const numElements = entry.shape.reduce((a, b) => a * b, 1);
    if (entry.byteLength !== numElements * DTYPE_BYTES[entry.dtype]) {
      throw new FerrumError(
        'invalid_checkpoint',
        `tensor ${entry.name} has ${entry.byteLength} bytes for its shape`,
        {
          details: { tensor: entry.name, file: entry.file },
        },
      );
    }
    let index = fileIndex.get(entry.file);
    if (index === undefined) {
      index = files.length;
      files.push(entry.file);
      fileIndex.set(entry.file, index);
    }
    loads.set([index, entry.byteOffset, entry.byteLength, DTYPE_CODES[entry.dtype], destination], i * 5);
  });
  return { files, loads };
}

/** The native fill list for dummy weights: per region [arena offset, elements, uniform scale, constant]. */
export function dummyFills(layout: WeightLayout): Float64Array {
  const fills = new Float64Array(layout.regions.length * 4);
  layout.regions.forEach((region, i) => {
    const scale = region.init === 'random' ? DUMMY_SCALE : 0;
    fills.set([region.offset, region.numElements, scale, region.init === 'one' ? 1 : 0], i * 4);
  });
  return fills;
}
