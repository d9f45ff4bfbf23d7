import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadModelConfig } from '../src/load-model-config.js';
import { paramCount } from '../src/param-count.js';
import { readSafetensorsIndex } from '../src/read-safetensors-index.js';
import { resolveWeights } from '../src/resolve-weights.js';
import { readGoldenStructure } from './helpers/golden-structure.js';
import { repoFixtures } from './helpers/paths.js';

const tinyModels = path.join(repoFixtures, 'tiny-models');

/** What each config.json written by scripts/fixtures/make_tiny_models.py says, read by hand. */
const expectedConfigs = {
  'llama2-mha': {
    architecture: 'llama',
    numKvHeads: 4,
    headDim: 16,
    rmsNormEps: 1e-5,
    rope: { type: 'default', theta: 10000 },
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
  'qwen2-bias-tied': { architecture: 'qwen2', attentionBias: true, tieWordEmbeddings: true, headDim: 16 },
  'qwen3-qknorm': {
    architecture: 'qwen3',
    qkNorm: true,
    headDim: 32,
    numKvHeads: 2,
    tieWordEmbeddings: true,
  },
  'qwen3-untied-mqa': { architecture: 'qwen3', numKvHeads: 1, numLayers: 4, tieWordEmbeddings: false },
} as const;

/** bf16 bit pattern of 1.0: transformers' default norm weight, which the fixtures must not keep. */
const BF16_ONE = 0x3f80;

async function readUint16(file: string, offset: number, count: number): Promise<number[]> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(count * 2);
    await handle.read(buffer, 0, buffer.length, offset);
    return Array.from({ length: count }, (_, i) => buffer.readUInt16LE(i * 2));
  } finally {
    await handle.close();
  }
}

describe('repo tiny models (fixtures/tiny-models)', () => {
  it.each(Object.keys(expectedConfigs))(
    '%s resolves config, weights, tokenizer and goldens',
    async (name) => {
      const dir = path.join(tinyModels, name);
      const manifest = JSON.parse(await readFile(path.join(tinyModels, 'manifest.json'), 'utf8'));
      const config = await loadModelConfig(dir);
      expect(config).toMatchObject(expectedConfigs[name as keyof typeof expectedConfigs]);
      // config.json says eos 2; generation_config.json adds <|im_end|> (4) for chat.
      expect(config).toMatchObject({
        vocabSize: 512,
        hiddenSize: 64,
        dtype: 'bf16',
        bosTokenId: 1,
        eosTokenIds: [2, 4],
      });
      expect(paramCount(config)).toBe(manifest[name].params);

      const entries = await resolveWeights(dir, config);
      const stored = [...(await readSafetensorsIndex(dir)).keys()].filter(
        (tensor) => !(config.tieWordEmbeddings && tensor === 'lm_head.weight'),
      );
      expect(entries.map((e) => e.name).sort()).toEqual(stored.sort());
      expect(entries.every((e) => e.dtype === 'bf16')).toBe(true);
      const norm = entries.find((e) => e.name === 'model.norm.weight')!;
      expect((await readUint16(norm.file, norm.byteOffset, 64)).some((bits) => bits !== BF16_ONE)).toBe(true);

      const tokenizerConfig = JSON.parse(await readFile(path.join(dir, 'tokenizer_config.json'), 'utf8'));
      expect(tokenizerConfig.chat_template).toContain('<|im_start|>');
      const tokenizer = JSON.parse(await readFile(path.join(dir, 'tokenizer.json'), 'utf8'));
      expect(Object.keys(tokenizer.model.vocab)).toHaveLength(512);
      expect(tokenizer.added_tokens.map((t: { content: string }) => t.content)).toEqual([
        '<pad>',
        '<s>',
        '</s>',
        '<|im_start|>',
        '<|im_end|>',
      ]);

      const golden = await readGoldenStructure(dir, config.vocabSize);
      expect(golden.greedyLengths).toEqual([24, 24, 24, 24]);
      const prompts = JSON.parse(await readFile(path.join(dir, 'golden.json'), 'utf8')).prompts as number[][];
      expect(prompts.map((p) => p.length)).toEqual([1, 7, 19, 40]);
    },
  );
});
