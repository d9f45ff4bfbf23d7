import { describe, expect, it } from 'vitest';
import { expectedTensors, hasOutputProjectionBias } from './expected-tensors.js';
import { normalizeModelConfig } from './normalize-model-config.js';
import { dummyTensorSpecs, paramCount, weightBytes } from './param-count.js';

const llama31_8b = normalizeModelConfig({
  model_type: 'llama',
  vocab_size: 128256,
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
});
const llama32_1b = normalizeModelConfig({
  model_type: 'llama',
  vocab_size: 128256,
  hidden_size: 2048,
  intermediate_size: 8192,
  num_hidden_layers: 16,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  head_dim: 64,
  tie_word_embeddings: true,
});
const mistral7b = normalizeModelConfig({
  model_type: 'mistral',
  vocab_size: 32768,
  hidden_size: 4096,
  intermediate_size: 14336,
  num_hidden_layers: 32,
  num_attention_heads: 32,
  num_key_value_heads: 8,
});
const qwen3_06b = normalizeModelConfig({
  model_type: 'qwen3',
  vocab_size: 151936,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: 28,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  tie_word_embeddings: true,
});

describe('paramCount and weightBytes', () => {
  it('match the published parameter counts of real models', () => {
    // Exact totals shown for the safetensors checkpoints on their model cards.
    expect(paramCount(llama31_8b)).toBe(8_030_261_248);
    expect(paramCount(llama32_1b)).toBe(1_235_814_400);
    expect(paramCount(mistral7b)).toBe(7_248_023_552);
    // Qwen3-0.6B's card: 0.6B in all, 0.44B without the (tied) embedding.
    const qwen = paramCount(qwen3_06b);
    expect(qwen / 1e9).toBeCloseTo(0.6, 1);
    expect((qwen - 151936 * 1024) / 1e9).toBeCloseTo(0.44, 2);
  });

  it('scale with the element size', () => {
    expect(weightBytes(llama32_1b, 'bf16')).toBe(2 * 1_235_814_400);
    expect(weightBytes(llama32_1b, 'f16')).toBe(2 * 1_235_814_400);
    expect(weightBytes(llama32_1b, 'f32')).toBe(4 * 1_235_814_400);
  });
});

describe('expectedTensors', () => {
  it('gives dummy weights the same tensors', () => {
    expect(dummyTensorSpecs(qwen3_06b)).toEqual(expectedTensors(qwen3_06b));
  });

  it('puts attention_bias on all four projections for Llama, on q/k/v only for Qwen2', () => {
    const base = {
      vocab_size: 8,
      hidden_size: 8,
      intermediate_size: 8,
      num_hidden_layers: 1,
      num_attention_heads: 2,
    };
    const llama = normalizeModelConfig({ ...base, model_type: 'llama', attention_bias: true });
    const qwen2 = normalizeModelConfig({ ...base, model_type: 'qwen2' });
    const biases = (names: string[]) => names.filter((n) => n.endsWith('.bias')).map((n) => n.split('.')[4]);
    expect(hasOutputProjectionBias(llama)).toBe(true);
    expect(biases(expectedTensors(llama).map((s) => s.name))).toEqual([
      'q_proj',
      'k_proj',
      'v_proj',
      'o_proj',
    ]);
    expect(hasOutputProjectionBias(qwen2)).toBe(false);
    expect(biases(expectedTensors(qwen2).map((s) => s.name))).toEqual(['q_proj', 'k_proj', 'v_proj']);
  });
});
