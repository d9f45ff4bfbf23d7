import type { ModelConfig } from '@ferrum/types';
import type { TensorSpec } from './tensor-entry.js';

/**
 * True when `o_proj` carries a bias too. transformers' Llama and Qwen3 attention put `attention_bias` on all
 * four projections, while Qwen2 has biases on q/k/v only ({@link ModelConfig.attentionBias} covers q/k/v).
 */
export function hasOutputProjectionBias(config: ModelConfig): boolean {
  return config.attentionBias && config.architecture !== 'qwen2';
}

/**
 * The tensors a checkpoint of this config must hold, with Hugging Face names and shapes (linear weights
 * are `[out, in]`), in load order: embedding, each layer, final norm, then `lm_head.weight` unless the
 * embeddings are tied. Pure; the same list serves dummy weights, which runtimes fill natively.
 */
export function expectedTensors(config: ModelConfig): TensorSpec[] {
  const { hiddenSize: hidden, headDim, intermediateSize: intermediate } = config;
  const qRows = config.numHeads * headDim;
  const kvRows = config.numKvHeads * headDim;
  const specs: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [config.vocabSize, hidden] }];
  for (let layer = 0; layer < config.numLayers; layer++) {
    const prefix = `model.layers.${layer}`;
    const attention = `${prefix}.self_attn`;
    specs.push(
      { name: `${prefix}.input_layernorm.weight`, shape: [hidden] },
      { name: `${attention}.q_proj.weight`, shape: [qRows, hidden] },
      { name: `${attention}.k_proj.weight`, shape: [kvRows, hidden] },
      { name: `${attention}.v_proj.weight`, shape: [kvRows, hidden] },
    );
    if (config.attentionBias) {
      specs.push(
        { name: `${attention}.q_proj.bias`, shape: [qRows] },
        { name: `${attention}.k_proj.bias`, shape: [kvRows] },
        { name: `${attention}.v_proj.bias`, shape: [kvRows] },
      );
    }
    if (config.qkNorm) {
      specs.push(
        { name: `${attention}.q_norm.weight`, shape: [headDim] },
        { name: `${attention}.k_norm.weight`, shape: [headDim] },
      );
    }
    specs.push({ name: `${attention}.o_proj.weight`, shape: [hidden, qRows] });
    if (hasOutputProjectionBias(config)) specs.push({ name: `${attention}.o_proj.bias`, shape: [hidden] });
    specs.push(
      { name: `${prefix}.post_attention_layernorm.weight`, shape: [hidden] },
      { name: `${prefix}.mlp.gate_proj.weight`, shape: [intermediate, hidden] },
      { name: `${prefix}.mlp.up_proj.weight`, shape: [intermediate, hidden] },
      { name: `${prefix}.mlp.down_proj.weight`, shape: [hidden, intermediate] },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [hidden] });
  if (!config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [config.vocabSize, hidden] });
  return specs;
}
