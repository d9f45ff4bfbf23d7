import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '@ferrum/engine';
import { afterAll, describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir, GOLDEN_SAMPLING, readGolden } from './fixture-models.js';

describe('a model directory without tokenizer files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferrum-no-tokenizer-'));
  for (const file of ['config.json', 'model.safetensors'])
    copyFileSync(join(fixtureDir('qwen3-qknorm'), file), join(dir, file));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves token-id prompts and refuses text prompts with a clear error', async () => {
    const engine = await createEngine({ model: dir, maxKvTokens: 1024 });
    expect(engine.tokenizer).toBeNull();
    expect(() => engine.generate({ prompt: { text: 'hello' } })).toThrow(
      /no tokenizer: send the prompt as token ids/,
    );
    const golden = readGolden('qwen3-qknorm');
    const out = await collect(
      engine.generate({ prompt: { tokenIds: golden.prompts[1] }, sampling: GOLDEN_SAMPLING }),
    );
    expect(out.tokens[0]).toEqual(golden.greedy[1]);
    expect(out.texts[0]).toBe('');
    await engine.shutdown();
  });
});
