import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejection } from '../test/helpers/rejection.js';
import { makeTempDir } from '../test/helpers/write-safetensors.js';
import { loadModelConfig } from './load-model-config.js';

const qwen3 = {
  model_type: 'qwen3',
  vocab_size: 100,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  head_dim: 8,
  eos_token_id: 5,
  dtype: 'bfloat16',
};

describe('loadModelConfig', () => {
  it('adds generation_config.json EOS ids and fills a missing BOS', async () => {
    const dir = await makeTempDir();
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(qwen3));
    expect(await loadModelConfig(dir)).toMatchObject({ eosTokenIds: [5], bosTokenId: null });

    await writeFile(
      path.join(dir, 'generation_config.json'),
      JSON.stringify({ bos_token_id: 3, eos_token_id: [6, 5] }),
    );
    expect(await loadModelConfig(dir)).toMatchObject({ eosTokenIds: [5, 6], bosTokenId: 3, headDim: 8 });
  });

  it('names the file when config.json is missing or broken', async () => {
    const dir = await makeTempDir();
    const missing = await rejection(loadModelConfig(dir));
    expect(missing.code).toBe('not_found');
    expect(missing.message).toContain(path.join(dir, 'config.json'));

    await writeFile(path.join(dir, 'config.json'), '{ nope');
    const broken = await rejection(loadModelConfig(dir));
    expect(broken.code).toBe('invalid_checkpoint');
    expect(broken.message).toContain(path.join(dir, 'config.json'));

    await writeFile(
      path.join(dir, 'config.json'),
      JSON.stringify({ ...qwen3, num_hidden_layers: undefined }),
    );
    const incomplete = await rejection(loadModelConfig(dir));
    expect(incomplete.message).toContain(path.join(dir, 'config.json'));
    expect(incomplete.message).toContain('num_hidden_layers');
  });
});
