import { FerrumError } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { normalizeModelConfig } from './normalize-model-config.js';

const llamaShape = {
  vocab_size: 1000,
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 8,
};

function thrown(fn: () => unknown): FerrumError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(FerrumError);
    return error as FerrumError;
  }
  throw new Error('expected a FerrumError');
}

describe('normalizeModelConfig', () => {
  it("fills Llama's transformers defaults", () => {
    const config = normalizeModelConfig({ model_type: 'llama', ...llamaShape });
    expect(config).toEqual({
      architecture: 'llama',
      vocabSize: 1000,
      hiddenSize: 64,
      intermediateSize: 128,
      numLayers: 2,
      numHeads: 8,
      numKvHeads: 8,
      headDim: 8,
      rmsNormEps: 1e-6,
      rope: { type: 'default', theta: 10000 },
      attentionBias: false,
      qkNorm: false,
      tieWordEmbeddings: false,
      maxPositionEmbeddings: 2048,
      bosTokenId: 1,
      eosTokenIds: [2],
      dtype: 'f32',
    });
  });

  it('uses architectures[0] when model_type is absent or unknown', () => {
    expect(normalizeModelConfig({ architectures: ['Qwen2ForCausalLM'], ...llamaShape }).architecture).toBe(
      'qwen2',
    );
    expect(
      normalizeModelConfig({ model_type: 'x', architectures: ['MistralForCausalLM'], ...llamaShape })
        .architecture,
    ).toBe('mistral');
  });

  it('applies per-family differences', () => {
    const qwen3 = normalizeModelConfig({ model_type: 'qwen3', ...llamaShape });
    expect(qwen3.headDim).toBe(128); // Qwen3Config's default, not hidden/heads
    expect(qwen3.qkNorm).toBe(true);
    expect(qwen3.attentionBias).toBe(false);
    expect(qwen3.bosTokenId).toBeNull();
    expect(qwen3.eosTokenIds).toEqual([]);
    const qwen2 = normalizeModelConfig({ model_type: 'qwen2', ...llamaShape, attention_bias: false });
    expect(qwen2.attentionBias).toBe(true);
    expect(qwen2.headDim).toBe(8);
    const mistral = normalizeModelConfig({ model_type: 'mistral', ...llamaShape, sliding_window: null });
    expect(mistral.numKvHeads).toBe(8);
    expect(mistral.maxPositionEmbeddings).toBe(131072);
    expect(
      normalizeModelConfig({ model_type: 'llama', ...llamaShape, attention_bias: true }).attentionBias,
    ).toBe(true);
  });

  it('reads GQA/MQA, decoupled head_dim, tied embeddings, dtype and eos lists', () => {
    const config = normalizeModelConfig({
      model_type: 'llama',
      ...llamaShape,
      num_key_value_heads: 1,
      head_dim: 32,
      tie_word_embeddings: true,
      torch_dtype: 'bfloat16',
      eos_token_id: [7, 9],
      bos_token_id: null,
    });
    expect(config).toMatchObject({ numKvHeads: 1, headDim: 32, tieWordEmbeddings: true, dtype: 'bf16' });
    expect(config.eosTokenIds).toEqual([7, 9]);
    expect(config.bosTokenId).toBeNull();
    expect(normalizeModelConfig({ model_type: 'llama', ...llamaShape, dtype: 'float16' }).dtype).toBe('f16');
  });

  it('reads llama3 RoPE scaling from classic keys and from rope_parameters', () => {
    const expected = {
      type: 'llama3',
      theta: 500000,
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 8192,
    };
    const scaling = {
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 8192,
    };
    const classic = {
      ...llamaShape,
      model_type: 'llama',
      rope_theta: 500000,
      rope_scaling: { rope_type: 'llama3', ...scaling },
    };
    expect(normalizeModelConfig(classic).rope).toEqual(expected);
    const oldSpelling = { ...classic, rope_scaling: { type: 'llama3', ...scaling } };
    expect(normalizeModelConfig(oldSpelling).rope).toEqual(expected);
    const v5 = {
      ...llamaShape,
      model_type: 'llama',
      rope_parameters: { rope_theta: 500000, rope_type: 'llama3', ...scaling },
    };
    expect(normalizeModelConfig(v5).rope).toEqual(expected);
    const plain = {
      ...llamaShape,
      model_type: 'qwen3',
      rope_parameters: { rope_theta: 1e6, rope_type: 'default' },
    };
    expect(normalizeModelConfig(plain).rope).toEqual({ type: 'default', theta: 1e6 });
  });

  it('caps the context at an active sliding window', () => {
    expect(
      normalizeModelConfig({ model_type: 'mistral', ...llamaShape, max_position_embeddings: 32768 })
        .maxPositionEmbeddings,
    ).toBe(4096);
    const qwen = { model_type: 'qwen2', ...llamaShape, max_position_embeddings: 32768, sliding_window: 1024 };
    expect(normalizeModelConfig(qwen).maxPositionEmbeddings).toBe(32768);
    expect(
      normalizeModelConfig({ ...qwen, use_sliding_window: true, max_window_layers: 1 }).maxPositionEmbeddings,
    ).toBe(1024);
    expect(
      normalizeModelConfig({ ...qwen, use_sliding_window: true, max_window_layers: 2 }).maxPositionEmbeddings,
    ).toBe(32768);
  });

  it('rejects what Ferrum cannot run with errors naming the file', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ model_type: 'gpt2', ...llamaShape }, 'unsupported_architecture', /gpt2/],
      [
        { model_type: 'llama', ...llamaShape, rope_scaling: { rope_type: 'yarn', factor: 4 } },
        'unsupported_architecture',
        /yarn/,
      ],
      [
        { model_type: 'llama', ...llamaShape, rope_scaling: { rope_type: 'llama3', factor: 8 } },
        'invalid_checkpoint',
        /low_freq_factor/,
      ],
      [{ model_type: 'llama', ...llamaShape, hidden_act: 'gelu' }, 'unsupported_architecture', /gelu/],
      [{ model_type: 'llama', ...llamaShape, mlp_bias: true }, 'unsupported_architecture', /mlp_bias/],
      [{ model_type: 'llama', ...llamaShape, torch_dtype: 'float8_e4m3fn' }, 'unsupported_dtype', /float8/],
      [{ model_type: 'llama', ...llamaShape, vocab_size: undefined }, 'invalid_checkpoint', /vocab_size/],
      [
        { model_type: 'llama', ...llamaShape, num_key_value_heads: 3 },
        'invalid_checkpoint',
        /num_key_value_heads/,
      ],
      [{ model_type: 'llama', ...llamaShape, hidden_size: 'big' }, 'invalid_checkpoint', /hidden_size/],
      [{ model_type: 'llama', ...llamaShape, eos_token_id: [2, 'x'] }, 'invalid_checkpoint', /eos_token_id/],
    ];
    for (const [raw, code, pattern] of cases) {
      const error = thrown(() => normalizeModelConfig(raw, '/models/m/config.json'));
      expect(error.code).toBe(code);
      expect(error.message).toMatch(pattern);
      expect(error.message).toContain('/models/m/config.json');
    }
  });

  it('does not modify its input', () => {
    const raw = { model_type: 'llama', ...llamaShape, eos_token_id: [2, 3] };
    const copy = structuredClone(raw);
    normalizeModelConfig(raw);
    expect(raw).toEqual(copy);
  });
});
