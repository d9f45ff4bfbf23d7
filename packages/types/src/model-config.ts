/** Element types of weights and activations. */
export type DType = 'f32' | 'f16' | 'bf16';

/** Architectures Ferrum runs. `mistral` is the Llama graph with Mistral's config keys. */
export type ModelArchitecture = 'llama' | 'qwen2' | 'qwen3' | 'mistral';

/** Rotary position embedding, normalized from `rope_theta`/`rope_scaling` or `rope_parameters`. */
export type RopeConfig =
  | { readonly type: 'default'; readonly theta: number }
  | {
      readonly type: 'llama3';
      readonly theta: number;
      readonly factor: number;
      readonly lowFreqFactor: number;
      readonly highFreqFactor: number;
      readonly originalMaxPositionEmbeddings: number;
    };

/**
 * One normalized description of a decoder-only transformer, whatever the family's config keys.
 * Runtimes build the forward graph from this alone.
 */
export interface ModelConfig {
  readonly architecture: ModelArchitecture;
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  /** Equal to `numHeads` for MHA, smaller for GQA, 1 for MQA. */
  readonly numKvHeads: number;
  /** Per-head size; may differ from `hiddenSize / numHeads` (Qwen3). */
  readonly headDim: number;
  readonly rmsNormEps: number;
  readonly rope: RopeConfig;
  /** q/k/v projections carry a bias (Qwen2). */
  readonly attentionBias: boolean;
  /** RMSNorm over each q and k head before RoPE (Qwen3). */
  readonly qkNorm: boolean;
  /** lm_head shares the embedding matrix. */
  readonly tieWordEmbeddings: boolean;
  readonly maxPositionEmbeddings: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
  /** dtype the checkpoint declares (`torch_dtype` / `dtype`), used as the default compute dtype. */
  readonly dtype: DType;
}
