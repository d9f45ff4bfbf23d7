import { type DType, FerrumError, type ModelArchitecture, type ModelConfig } from '@ferrum/types';
import { ConfigFields } from './config-fields.js';
import { parseRopeConfig } from './rope-config.js';

/** Hugging Face class names (`architectures[0]`) Ferrum maps onto its graphs. */
const ARCHITECTURE_CLASSES: Readonly<Record<string, ModelArchitecture>> = {
  LlamaForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  MistralForCausalLM: 'mistral',
};

/** `torch_dtype` / `dtype` spellings Ferrum loads. */
const DTYPES: Readonly<Record<string, DType>> = {
  bfloat16: 'bf16',
  float16: 'f16',
  float32: 'f32',
  bf16: 'bf16',
  fp16: 'f16',
  fp32: 'f32',
};

/**
 * Per-family defaults for keys a config may omit, as transformers 5's config classes set them
 * (LlamaConfig, Qwen2Config, Qwen3Config, MistralConfig). The families differ: Qwen3 defaults `head_dim`
 * to 128 rather than hidden/heads, Mistral defaults to 8 KV heads and a 4096-token sliding window, the
 * Qwen families have no default BOS/EOS.
 */
interface FamilyDefaults {
  readonly maxPositionEmbeddings: number;
  readonly numKvHeads: 'heads' | number;
  readonly headDim: 'hidden/heads' | number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
}

const FAMILY_DEFAULTS: Readonly<Record<ModelArchitecture, FamilyDefaults>> = {
  llama: {
    maxPositionEmbeddings: 2048,
    numKvHeads: 'heads',
    headDim: 'hidden/heads',
    bosTokenId: 1,
    eosTokenId: 2,
  },
  mistral: {
    maxPositionEmbeddings: 131_072,
    numKvHeads: 8,
    headDim: 'hidden/heads',
    bosTokenId: 1,
    eosTokenId: 2,
  },
  qwen2: {
    maxPositionEmbeddings: 32_768,
    numKvHeads: 'heads',
    headDim: 'hidden/heads',
    bosTokenId: null,
    eosTokenId: null,
  },
  qwen3: {
    maxPositionEmbeddings: 32_768,
    numKvHeads: 'heads',
    headDim: 128,
    bosTokenId: null,
    eosTokenId: null,
  },
};

/** Every family's transformers default. */
const DEFAULT_RMS_NORM_EPS = 1e-6;

/**
 * Normalizes a Hugging Face `config.json` object of a Llama, Qwen2, Qwen3 or Mistral checkpoint into a
 * {@link ModelConfig}. Does not modify `raw`.
 *
 * Keys that decide the shape (`vocab_size`, `hidden_size`, `intermediate_size`, `num_hidden_layers`,
 * `num_attention_heads`) are required; other keys fall back to transformers' defaults for the family.
 * Sliding-window attention equals full attention while the context fits the window, so a checkpoint whose
 * layers slide gets `maxPositionEmbeddings` capped at the window instead of being rejected.
 *
 * @param raw the parsed JSON object.
 * @param source the file it came from, quoted in error messages (default `"config.json"`).
 * @throws FerrumError `unsupported_architecture` (family, RoPE type, activation, MLP bias),
 *   `unsupported_dtype`, or `invalid_checkpoint` (missing or malformed keys).
 */
export function normalizeModelConfig(raw: Record<string, unknown>, source = 'config.json'): ModelConfig {
  const fields = new ConfigFields(raw, source);
  const architecture = detectArchitecture(fields);
  const defaults = FAMILY_DEFAULTS[architecture];
  rejectUnsupportedFeatures(fields);

  const hiddenSize = fields.requiredInt('hidden_size');
  const numHeads = fields.requiredInt('num_attention_heads');
  const numKvHeads = fields.int(
    'num_key_value_heads',
    defaults.numKvHeads === 'heads' ? numHeads : defaults.numKvHeads,
  );
  if (numHeads % numKvHeads !== 0) {
    throw new FerrumError(
      'invalid_checkpoint',
      `${source}: num_attention_heads (${numHeads}) is not a multiple of num_key_value_heads (${numKvHeads})`,
      { details: { file: source } },
    );
  }
  // An explicit null means "none" (transformers keeps None); only an absent key takes the family default.
  const eosTokenIds = fields.declares('eos_token_id')
    ? fields.tokenIds('eos_token_id')
    : defaults.eosTokenId === null
      ? []
      : [defaults.eosTokenId];

  return {
    architecture,
    vocabSize: fields.requiredInt('vocab_size'),
    hiddenSize,
    intermediateSize: fields.requiredInt('intermediate_size'),
    numLayers: fields.requiredInt('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim: fields.int('head_dim', defaultHeadDim(defaults, hiddenSize, numHeads, source)),
    rmsNormEps: fields.positiveNumber('rms_norm_eps', DEFAULT_RMS_NORM_EPS),
    rope: parseRopeConfig(fields),
    // Qwen2 always has q/k/v biases (no switch); Mistral never has any; Llama and Qwen3 follow attention_bias.
    attentionBias:
      architecture === 'qwen2' || (architecture !== 'mistral' && fields.bool('attention_bias', false)),
    qkNorm: architecture === 'qwen3',
    tieWordEmbeddings: fields.bool('tie_word_embeddings', false),
    maxPositionEmbeddings: contextLimit(fields, architecture, defaults.maxPositionEmbeddings),
    bosTokenId: fields.declares('bos_token_id') ? fields.tokenId('bos_token_id') : defaults.bosTokenId,
    eosTokenIds,
    dtype: parseDtype(fields),
  };
}

function detectArchitecture(fields: ConfigFields): ModelArchitecture {
  const modelType = fields.string('model_type');
  if (modelType !== undefined && modelType in FAMILY_DEFAULTS) return modelType as ModelArchitecture;
  const classes = fields.value('architectures');
  const className = Array.isArray(classes) && typeof classes[0] === 'string' ? classes[0] : undefined;
  if (className !== undefined && className in ARCHITECTURE_CLASSES) return ARCHITECTURE_CLASSES[className]!;
  throw new FerrumError(
    'unsupported_architecture',
    `${fields.source}: unsupported architecture (model_type ${JSON.stringify(modelType ?? null)}, ` +
      `architectures ${JSON.stringify(classes ?? null)}); supported: llama, qwen2, qwen3, mistral`,
    { details: { file: fields.source, modelType, architectures: classes } },
  );
}

function rejectUnsupportedFeatures(fields: ConfigFields): void {
  const activation = fields.string('hidden_act') ?? 'silu';
  if (activation !== 'silu') {
    throw new FerrumError(
      'unsupported_architecture',
      `${fields.source}: unsupported hidden_act "${activation}" (Ferrum's MLP is SwiGLU with silu)`,
      { details: { file: fields.source, hiddenAct: activation } },
    );
  }
  if (fields.bool('mlp_bias', false)) {
    throw new FerrumError('unsupported_architecture', `${fields.source}: mlp_bias=true is not supported`, {
      details: { file: fields.source },
    });
  }
}

function defaultHeadDim(
  defaults: FamilyDefaults,
  hiddenSize: number,
  numHeads: number,
  source: string,
): number {
  if (defaults.headDim !== 'hidden/heads') return defaults.headDim;
  if (hiddenSize % numHeads !== 0) {
    throw new FerrumError(
      'invalid_checkpoint',
      `${source}: hidden_size (${hiddenSize}) is not a multiple of num_attention_heads (${numHeads}) and head_dim is absent`,
      { details: { file: source } },
    );
  }
  return hiddenSize / numHeads;
}

/** `max_position_embeddings`, capped at the sliding window when some layer slides (see normalizeModelConfig). */
function contextLimit(fields: ConfigFields, architecture: ModelArchitecture, fallback: number): number {
  const maxPositions = fields.int('max_position_embeddings', fallback);
  const window = slidingWindow(fields, architecture);
  return window === null ? maxPositions : Math.min(maxPositions, window);
}

function slidingWindow(fields: ConfigFields, architecture: ModelArchitecture): number | null {
  if (architecture === 'llama') return null;
  if (architecture === 'mistral') {
    // MistralConfig defaults the window to 4096 when the key is absent; null disables it.
    if (!fields.declares('sliding_window')) return 4096;
    return fields.has('sliding_window') ? fields.int('sliding_window', 0) : null;
  }
  // Qwen2/Qwen3 slide only with use_sliding_window, on layers listed as sliding (or past max_window_layers).
  if (!fields.bool('use_sliding_window', false) || !fields.has('sliding_window')) return null;
  const layerTypes = fields.value('layer_types');
  const slides = Array.isArray(layerTypes)
    ? layerTypes.includes('sliding_attention')
    : fields.int('max_window_layers', 28) < fields.requiredInt('num_hidden_layers');
  return slides ? fields.int('sliding_window', 0) : null;
}

function parseDtype(fields: ConfigFields): DType {
  const name = fields.string('dtype') ?? fields.string('torch_dtype');
  // transformers loads a checkpoint that declares nothing in float32.
  if (name === undefined) return 'f32';
  const dtype = DTYPES[name];
  if (dtype === undefined) {
    throw new FerrumError(
      'unsupported_dtype',
      `${fields.source}: unsupported dtype "${name}" (supported: bfloat16, float16, float32)`,
      { details: { file: fields.source, dtype: name } },
    );
  }
  return dtype;
}
