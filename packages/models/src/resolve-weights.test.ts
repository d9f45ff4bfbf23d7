import path from 'node:path';
import type { ModelConfig } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { rejection } from '../test/helpers/rejection.js';
import { makeTempDir, type SyntheticTensor, writeSafetensors } from '../test/helpers/write-safetensors.js';
import { resolveWeights } from './resolve-weights.js';

/** One-layer Qwen2 (q/k/v biases, GQA 4:2, head_dim 8), tied embeddings. */
const config: ModelConfig = {
  architecture: 'qwen2',
  vocabSize: 10,
  hiddenSize: 16,
  intermediateSize: 24,
  numLayers: 1,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  rope: { type: 'default', theta: 10000 },
  attentionBias: true,
  qkNorm: false,
  tieWordEmbeddings: true,
  maxPositionEmbeddings: 128,
  bosTokenId: null,
  eosTokenIds: [1],
  dtype: 'bf16',
};

// Written out by hand from transformers' Qwen2 module tree, independently of expectedTensors.
const checkpoint: SyntheticTensor[] = [
  { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [10, 16] },
  { name: 'model.layers.0.input_layernorm.weight', dtype: 'BF16', shape: [16] },
  { name: 'model.layers.0.self_attn.q_proj.weight', dtype: 'BF16', shape: [32, 16] },
  { name: 'model.layers.0.self_attn.q_proj.bias', dtype: 'BF16', shape: [32] },
  { name: 'model.layers.0.self_attn.k_proj.weight', dtype: 'BF16', shape: [16, 16] },
  { name: 'model.layers.0.self_attn.k_proj.bias', dtype: 'BF16', shape: [16] },
  { name: 'model.layers.0.self_attn.v_proj.weight', dtype: 'BF16', shape: [16, 16] },
  { name: 'model.layers.0.self_attn.v_proj.bias', dtype: 'BF16', shape: [16] },
  { name: 'model.layers.0.self_attn.o_proj.weight', dtype: 'BF16', shape: [16, 32] },
  { name: 'model.layers.0.post_attention_layernorm.weight', dtype: 'F32', shape: [16] },
  { name: 'model.layers.0.mlp.gate_proj.weight', dtype: 'BF16', shape: [24, 16] },
  { name: 'model.layers.0.mlp.up_proj.weight', dtype: 'BF16', shape: [24, 16] },
  { name: 'model.layers.0.mlp.down_proj.weight', dtype: 'BF16', shape: [16, 24] },
  { name: 'model.norm.weight', dtype: 'BF16', shape: [16] },
];

async function modelDir(tensors: readonly SyntheticTensor[]): Promise<string> {
  const dir = await makeTempDir();
  await writeSafetensors(path.join(dir, 'model.safetensors'), tensors);
  return dir;
}

describe('resolveWeights', () => {
  it('finds every tensor of a tied model, with or without a stored lm_head', async () => {
    const names = checkpoint.map((t) => t.name).sort();
    const entries = await resolveWeights(await modelDir(checkpoint), config);
    expect(entries.map((e) => e.name).sort()).toEqual(names);
    expect(entries.find((e) => e.name.includes('post_attention'))?.dtype).toBe('f32');

    const withHead = [...checkpoint, { name: 'lm_head.weight', dtype: 'BF16', shape: [10, 16] }];
    expect((await resolveWeights(await modelDir(withHead), config)).map((e) => e.name).sort()).toEqual(names);
  });

  it('needs lm_head when embeddings are untied', async () => {
    const untied = { ...config, tieWordEmbeddings: false };
    const error = await rejection(resolveWeights(await modelDir(checkpoint), untied));
    expect(error.code).toBe('missing_tensor');
    expect(error.message).toContain('lm_head.weight');
  });

  it('names the missing tensor and the files searched', async () => {
    const dir = await modelDir(checkpoint.filter((t) => !t.name.endsWith('k_proj.bias')));
    const error = await rejection(resolveWeights(dir, config));
    expect(error.code).toBe('missing_tensor');
    expect(error.message).toContain('model.layers.0.self_attn.k_proj.bias');
    expect(error.message).toContain(path.join(dir, 'model.safetensors'));
  });

  it('names tensor, file and both shapes on a shape mismatch', async () => {
    const wrong = checkpoint.map((t) =>
      t.name.endsWith('down_proj.weight') ? { ...t, shape: [24, 16] } : t,
    );
    const dir = await modelDir(wrong);
    const error = await rejection(resolveWeights(dir, config));
    expect(error.code).toBe('shape_mismatch');
    expect(error.message).toContain('model.layers.0.mlp.down_proj.weight');
    expect(error.message).toContain(path.join(dir, 'model.safetensors'));
    expect(error.message).toContain('[24, 16]');
    expect(error.message).toContain('[16, 24]');
  });
});
