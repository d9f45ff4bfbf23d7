import { expectedTensors } from '@ferrum/models';
import type { ModelConfig } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { dummyFills, weightLayout } from './weight-layout.js';

const base: ModelConfig = {
  architecture: 'qwen2',
  vocabSize: 512,
  hiddenSize: 64,
  intermediateSize: 160,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 32,
  rmsNormEps: 1e-6,
  rope: { type: 'default', theta: 1e6 },
  attentionBias: true,
  qkNorm: true,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 2048,
  bosTokenId: null,
  eosTokenIds: [2],
  dtype: 'bf16',
};

describe('weightLayout', () => {
  it.each([
    ['qwen2 with biases, untied', base],
    [
      'llama tied, no qk-norm',
      {
        ...base,
        architecture: 'llama',
        attentionBias: false,
        qkNorm: false,
        tieWordEmbeddings: true,
      } as ModelConfig,
    ],
  ])('gives every expected tensor a disjoint, in-bounds destination (%s)', (_name, config) => {
    const layout = weightLayout(config);
    const spans = expectedTensors(config).map(({ name, shape }) => {
      const offset = layout.destinations.get(name);
      expect(offset, name).toBeDefined();
      return { name, start: offset!, end: offset! + 2 * shape.reduce((a, b) => a * b, 1) };
    });
    spans.sort((a, b) => a.start - b.start);
    for (let i = 1; i < spans.length; i++)
      expect(spans[i].start, spans[i].name).toBeGreaterThanOrEqual(spans[i - 1].end);
    expect(spans[spans.length - 1].end).toBeLessThanOrEqual(layout.arenaBytes);
    expect(layout.lmHeadOffset >= 0).toBe(!config.tieWordEmbeddings);
  });

  it('fuses q|k|v and gate|up as consecutive row blocks of one matrix', () => {
    const layout = weightLayout(base);
    const d = layout.destinations;
    const h = base.hiddenSize;
    expect(
      d.get('model.layers.1.self_attn.k_proj.weight')! - d.get('model.layers.1.self_attn.q_proj.weight')!,
    ).toBe(4 * 32 * h * 2);
    expect(
      d.get('model.layers.1.self_attn.v_proj.weight')! - d.get('model.layers.1.self_attn.k_proj.weight')!,
    ).toBe(2 * 32 * h * 2);
    expect(d.get('model.layers.0.mlp.up_proj.weight')! - d.get('model.layers.0.mlp.gate_proj.weight')!).toBe(
      160 * h * 2,
    );
  });

  it('fills dummy norms with ones, biases with zeros and matrices with small uniform values', () => {
    const layout = weightLayout(base);
    const fills = dummyFills(layout);
    const at = (offset: number) => {
      const i = layout.regions.findIndex((region) => region.offset === offset);
      return Array.from(fills.subarray(i * 4, i * 4 + 4));
    };
    expect(at(layout.finalNormOffset).slice(2)).toEqual([0, 1]);
    expect(at(layout.destinations.get('model.layers.0.self_attn.q_proj.bias')!).slice(2)).toEqual([0, 0]);
    expect(at(layout.embedOffset)[2]).toBeCloseTo(0.02 * Math.sqrt(3));
  });
});
