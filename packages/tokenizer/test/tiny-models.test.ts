import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChatMessage } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HfTokenizer, loadTokenizer } from '../src/index.js';
import { repoRoot } from './shared-paths.js';

/** `fixtures/tiny-models/tokenizer-golden.json`: transformers' results for the repo's own trained tokenizer. */
interface TinyGolden {
  readonly encode: readonly { readonly text: string; readonly ids: number[] }[];
  readonly decode: readonly {
    readonly ids: number[];
    readonly skip_special_tokens: boolean;
    readonly text: string;
  }[];
  readonly chat: {
    readonly messages: ChatMessage[];
    readonly add_generation_prompt: boolean;
    readonly text: string;
    readonly ids: number[];
  };
}

const tinyDir = path.join(repoRoot, 'fixtures', 'tiny-models');
const modelDir = path.join(tinyDir, 'qwen3-qknorm');
const goldenFile = path.join(tinyDir, 'tokenizer-golden.json');

describe.skipIf(!existsSync(goldenFile))('repo tiny tokenizer (skipped: fixtures/tiny-models absent)', () => {
  const golden = existsSync(goldenFile) ? (JSON.parse(readFileSync(goldenFile, 'utf8')) as TinyGolden) : null;
  let tokenizer: HfTokenizer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(modelDir))!;
  });
  afterAll(() => tokenizer.dispose());

  it('encodes, decodes and renders as transformers', () => {
    for (const { text, ids } of golden!.encode) {
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
      // add_bos_token is false and the file has no post-processor: nothing is added.
      expect(tokenizer.encode(text)).toEqual(ids);
    }
    for (const { ids, skip_special_tokens, text } of golden!.decode) {
      expect(tokenizer.decode(ids, { skipSpecialTokens: skip_special_tokens })).toBe(text);
    }
    const { messages, add_generation_prompt, text, ids } = golden!.chat;
    expect(tokenizer.applyChatTemplate(messages, { addGenerationPrompt: add_generation_prompt })).toBe(text);
    expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(ids);
  });

  it('takes EOS ids from the tokenizer and generation_config.json', () => {
    expect(tokenizer.eosTokenIds).toEqual([2, 4]);
    expect(tokenizer.bosTokenId).toBe(1);
    expect(tokenizer.vocabSize).toBe(512);
    expect(tokenizer.modelMaxLength).toBe(2048);
  });

  it('serves synchronous and asynchronous encodes side by side', async () => {
    const texts = golden!.encode.map((entry) => entry.text);
    const pending = Array.from({ length: 24 }, (_, i) => tokenizer.encodeAsync(texts[i % texts.length]));
    const sync = texts.map((text) => tokenizer.encode(text));
    const async = await Promise.all(pending);
    expect(sync).toEqual(golden!.encode.map((entry) => entry.ids));
    for (const [i, ids] of async.entries()) expect(ids).toEqual(golden!.encode[i % texts.length].ids);
  });

  it('loads merges written as "a b" strings the same as [a, b] pairs', async () => {
    const json = JSON.parse(readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8'));
    expect(Array.isArray(json.model.merges[0])).toBe(true);
    json.model.merges = json.model.merges.map((pair: [string, string]) => pair.join(' '));
    const dir = mkdtempSync(path.join(tmpdir(), 'ferrum-merges-'));
    try {
      writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
      const stringMerges = (await loadTokenizer(dir))!;
      for (const { text, ids } of golden!.encode) expect(stringMerges.encode(text)).toEqual(ids);
      await stringMerges.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!existsSync(goldenFile))('tokenizer lifetime (skipped: fixtures/tiny-models absent)', () => {
  it('refuses work after dispose and fails calls still waiting', async () => {
    const tokenizer = (await loadTokenizer(modelDir))!;
    const waiting = expect(tokenizer.encodeAsync('x'.repeat(100_000))).rejects.toMatchObject({
      code: 'aborted',
    });
    await tokenizer.dispose();
    await waiting;
    expect(() => tokenizer.encode('hi')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    expect(() => tokenizer.encode(42 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
    expect(tokenizer.decode([1, 3])).toBe('<s><|im_start|>');
  });
});

describe('loadTokenizer without a tokenizer', () => {
  it('returns null for a directory without tokenizer.json', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ferrum-empty-'));
    try {
      expect(await loadTokenizer(dir)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a malformed tokenizer.json with invalid_checkpoint', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ferrum-bad-'));
    try {
      writeFileSync(path.join(dir, 'tokenizer.json'), '{"model": {"type": "BPE", "vocab": 3}}');
      await expect(loadTokenizer(dir)).rejects.toMatchObject({
        name: 'FerrumError',
        code: 'invalid_checkpoint',
      });
      writeFileSync(path.join(dir, 'tokenizer.json'), 'not json');
      await expect(loadTokenizer(dir)).rejects.toMatchObject({ code: 'invalid_checkpoint' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
