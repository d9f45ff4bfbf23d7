import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGoldenStructure } from './helpers/golden-structure.js';
import { hasShared, repoFixtures, sharedFixtures } from './helpers/paths.js';

const names = ['llama2-mha', 'llama3-gqa-tied', 'qwen2-bias-tied', 'qwen3-qknorm', 'qwen3-untied-mqa'];
/** Keys that decide the model's shape and how its config is spelled. */
const shapeKeys = [
  'model_type',
  'architectures',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'head_dim',
  'tie_word_embeddings',
  'vocab_size',
  'rope_parameters',
  'rope_theta',
  'rope_scaling',
];

async function readConfig(dir: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8'));
}

describe.skipIf(!hasShared)(
  'repo goldens match the shared goldens in structure (skipped: ../shared absent)',
  () => {
    it.each(names)('%s', async (name) => {
      const repoDir = path.join(repoFixtures, 'tiny-models', name);
      const sharedDir = path.join(sharedFixtures, 'tiny-models', name);
      const [repoConfig, sharedConfig] = await Promise.all([readConfig(repoDir), readConfig(sharedDir)]);
      for (const key of shapeKeys) expect(repoConfig[key], key).toEqual(sharedConfig[key]);

      const vocab = sharedConfig.vocab_size as number;
      const [repo, shared] = await Promise.all([
        readGoldenStructure(repoDir, vocab),
        readGoldenStructure(sharedDir, vocab),
      ]);
      expect(repo).toEqual(shared);
    });
  },
);
