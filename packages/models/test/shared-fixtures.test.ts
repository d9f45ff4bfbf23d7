import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModelConfig } from '../src/load-model-config.js';
import { normalizeModelConfig } from '../src/normalize-model-config.js';
import { paramCount, weightBytes } from '../src/param-count.js';
import { readSafetensorsIndex } from '../src/read-safetensors-index.js';
import { resolveWeights } from '../src/resolve-weights.js';
import { hasShared, sharedFixtures } from './helpers/paths.js';

const tinyModels = path.join(sharedFixtures, 'tiny-models');

/** What each shared tiny model's config.json says, read by hand. */
const expectedConfigs = {
  'llama2-mha': {
    architecture: 'llama',
    numKvHeads: 4,
    headDim: 16,
    tieWordEmbeddings: false,
    rope: { type: 'default', theta: 10000 },
    rmsNormEps: 1e-5,
  },
  'llama3-gqa-tied': {
    architecture: 'llama',
    numKvHeads: 2,
    tieWordEmbeddings: true,
    rope: {
      type: 'llama3',
      theta: 500000,
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 64,
    },
  },
  'qwen2-bias-tied': {
    architecture: 'qwen2',
    attentionBias: true,
    tieWordEmbeddings: true,
    rope: { type: 'default', theta: 1e6 },
  },
  'qwen3-qknorm': {
    architecture: 'qwen3',
    qkNorm: true,
    headDim: 32,
    numKvHeads: 2,
    rope: { type: 'default', theta: 1e6 },
  },
  'qwen3-untied-mqa': { architecture: 'qwen3', numKvHeads: 1, numLayers: 4, tieWordEmbeddings: false },
} as const;

describe.skipIf(!hasShared)('shared tiny models (skipped: ../shared absent)', () => {
  it.each(Object.keys(expectedConfigs))('%s: config, weights and parameter count', async (name) => {
    const dir = path.join(tinyModels, name);
    const manifest = JSON.parse(await readFile(path.join(tinyModels, 'manifest.json'), 'utf8'));
    const config = await loadModelConfig(dir);
    expect(config).toMatchObject(expectedConfigs[name as keyof typeof expectedConfigs]);
    expect(config).toMatchObject({
      vocabSize: 512,
      hiddenSize: 64,
      dtype: 'bf16',
      bosTokenId: 1,
      eosTokenIds: [2],
    });

    const entries = await resolveWeights(dir, config);
    // Every tensor transformers saved is used, except a tied model's duplicate lm_head.
    const stored = [...(await readSafetensorsIndex(dir)).keys()].filter(
      (tensor) => !(config.tieWordEmbeddings && tensor === 'lm_head.weight'),
    );
    expect(entries.map((e) => e.name).sort()).toEqual(stored.sort());
    expect(paramCount(config)).toBe(manifest[name].params);
    expect(weightBytes(config, 'bf16')).toBe(2 * manifest[name].params);
  });
});

/** Published totals (embeddings included) and, for Qwen3, non-embedding counts from the model cards, in billions. */
const publishedSizes: Record<string, { total: number; nonEmbedding?: number }> = {
  'qwen3-0.6b.json': { total: 0.6, nonEmbedding: 0.44 },
  'qwen3-4b.json': { total: 4.0, nonEmbedding: 3.6 },
  'qwen3-8b.json': { total: 8.2, nonEmbedding: 6.95 },
  'qwen3-32b.json': { total: 32.8, nonEmbedding: 31.2 },
  'llama-3.2-1b.json': { total: 1.24 },
  'llama-3.1-8b.json': { total: 8.03 },
  'mistral-7b-v0.3.json': { total: 7.25 },
};

describe.skipIf(!hasShared)('shared real-model configs (skipped: ../shared absent)', () => {
  it.each(Object.keys(publishedSizes))('%s normalizes and has its published size', async (file) => {
    const source = path.join(sharedFixtures, 'configs', file);
    const config = normalizeModelConfig(JSON.parse(await readFile(source, 'utf8')), source);
    const { total, nonEmbedding } = publishedSizes[file]!;
    const params = paramCount(config);
    expect(Math.abs(params / 1e9 - total)).toBeLessThan(0.05);
    if (nonEmbedding !== undefined) {
      const embeddings = config.vocabSize * config.hiddenSize * (config.tieWordEmbeddings ? 1 : 2);
      expect(Math.abs((params - embeddings) / 1e9 - nonEmbedding)).toBeLessThan(0.05);
    }
  });

  it('reads the shapes that matter for Qwen3-0.6B, Llama-3.2-1B and Mistral-7B', async () => {
    const load = async (file: string) =>
      normalizeModelConfig(
        JSON.parse(await readFile(path.join(sharedFixtures, 'configs', file), 'utf8')),
        file,
      );
    expect(await load('qwen3-0.6b.json')).toMatchObject({
      headDim: 128,
      numHeads: 16,
      numKvHeads: 8,
      tieWordEmbeddings: true,
    });
    expect((await load('llama-3.2-1b.json')).rope).toMatchObject({ type: 'llama3', factor: 32 });
    expect(await load('mistral-7b-v0.3.json')).toMatchObject({
      headDim: 128,
      maxPositionEmbeddings: 32768,
      attentionBias: false,
    });
  });
});
