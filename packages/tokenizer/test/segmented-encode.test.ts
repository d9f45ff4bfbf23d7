import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../src/index.js';
import type { SegmentedEncoder } from '../src/segmented-encoder.js';
import { npmTokenizerDir } from './npm-tokenizers.js';
import { hasShared, sharedTokenizersDir } from './shared-paths.js';

/** Pieces of chat text, chosen to meet added tokens with spaces, newlines, digits, CJK and emoji around them. */
const PIECES = [
  'Hello',
  ' world',
  'world',
  '  ',
  ' ',
  '\n',
  '\n\n',
  '\t',
  '123',
  ' 4567',
  "it's",
  '你好，世界',
  ' 🦀🚀',
  'naïve café',
  '<',
  '|',
  '>',
  '.',
  '?!',
  'system',
  'user\n',
  'assistant',
];

/**
 * Conversations that grow a turn at a time, as an agent sends them: random pieces between the file's added
 * tokens. Each text repeats the one before, so the cache is hit, and adds new pieces.
 */
function conversations(dir: string, seed: number): string[] {
  const added = (JSON.parse(readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')).added_tokens ?? []) as {
    content: string;
  }[];
  const tokens = added.map((t) => t.content).slice(0, 40);
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const texts: string[] = [];
  for (let conversation = 0; conversation < 6; conversation++) {
    let text = '';
    for (let turn = 0; turn < 8; turn++) {
      const numPieces = 1 + Math.floor(random() * 12);
      for (let p = 0; p < numPieces; p++) text += pick(PIECES);
      if (tokens.length > 0) text += pick(tokens);
      if (random() < 0.5) text += pick(PIECES);
      texts.push(text);
    }
  }
  return texts;
}

/** The encoder behind `encodeAsync` without special tokens (private: read here to see it kept its cache). */
const segmentedOf = (tokenizer: object) => (tokenizer as { segmented: SegmentedEncoder | null }).segmented;

async function expectSameAsWhole(dir: string, seed: number): Promise<void> {
  const tokenizer = await loadTokenizer(dir);
  try {
    for (const text of conversations(dir, seed)) {
      const whole = tokenizer!.encode(text, { addSpecialTokens: false });
      expect(await tokenizer!.encodeAsync(text, { addSpecialTokens: false })).toEqual(whole);
    }
    // Pieces were encoded apart throughout: no check against a whole encode disagreed.
    const segmented = segmentedOf(tokenizer!);
    if (segmented !== null) expect(segmented.cachesPieces).toBe(true);
  } finally {
    await tokenizer!.dispose();
  }
}

describe('encodeAsync without special tokens, a cached piece at a time, equals a whole encode', () => {
  it.each(['qwen3', 'qwen2_5', 'llama3_1', 'llama2'] as const)('%s (npm)', async (name) => {
    await expectSameAsWhole(npmTokenizerDir(name), 1);
  });

  it('encodes pieces apart for the byte-level files (Qwen, Llama 3)', async () => {
    for (const name of ['qwen3', 'qwen2_5', 'llama3_1'] as const) {
      const tokenizer = await loadTokenizer(npmTokenizerDir(name));
      expect(segmentedOf(tokenizer!)).not.toBeNull();
      await tokenizer!.dispose();
    }
  });

  const shared = hasShared ? readdirSync(sharedTokenizersDir).filter((name) => name !== 'test-vectors') : [];
  it.skipIf(!hasShared).each(shared)('%s (../shared; skipped when absent)', async (name) => {
    await expectSameAsWhole(path.join(sharedTokenizersDir, name), 2);
  });
});
