import path from 'node:path';
import fc from 'fast-check';
import { Tokenizer as NativeTokenizer } from 'tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HfTokenizer, loadTokenizer } from '../src/index.js';
import { npmTokenizerDir } from './npm-tokenizers.js';
import { repoRoot } from './shared-paths.js';

/** Tokenizers under test: byte-level BPE (Qwen, Llama 3, the repo's tiny one) and sentencepiece byte fallback. */
const DIRS = {
  'qwen2.5': () => npmTokenizerDir('qwen2_5'),
  'llama3.0': () => npmTokenizerDir('llama3_1'),
  'mistral-v0.1': () => npmTokenizerDir('llama2'),
  tiny: () => path.join(repoRoot, 'fixtures', 'tiny-models', 'qwen3-qknorm'),
};

describe.each(Object.keys(DIRS) as (keyof typeof DIRS)[])('streaming detokenization (%s)', (name) => {
  let tokenizer: HfTokenizer;
  /** The Rust tokenizer's own `decode`, loaded straight from the file: the reference. */
  let reference: NativeTokenizer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(DIRS[name]()))!;
    reference = NativeTokenizer.fromFile(path.join(DIRS[name](), 'tokenizer.json'));
  });
  afterAll(() => tokenizer.dispose());

  /** Random ids, biased towards the ends of the vocabulary (byte tokens, added and special tokens). */
  const ids = () =>
    fc.array(
      fc.oneof(
        fc.integer({ min: 0, max: tokenizer.vocabSize - 1 }),
        fc.integer({ min: 0, max: Math.min(300, tokenizer.vocabSize - 1) }),
        fc.integer({ min: Math.max(0, tokenizer.vocabSize - 40), max: tokenizer.vocabSize - 1 }),
      ),
      { maxLength: 48 },
    );

  it('has the Rust tokenizer vocabulary', () => {
    expect(tokenizer.vocabSize).toBe(reference.getVocabSize(true));
    for (let id = 0; id < tokenizer.vocabSize; id += 97) {
      const token = reference.idToToken(id);
      expect(tokenizer.idToToken(id)).toBe(token);
      if (token !== null) expect(tokenizer.tokenToId(token)).toBe(reference.tokenToId(token));
    }
  });

  it('decode equals the Rust tokenizer decode for random ids', async () => {
    await fc.assert(
      fc.asyncProperty(ids(), fc.boolean(), async (sequence, skipSpecialTokens) => {
        const expected = await reference.decode(sequence, skipSpecialTokens);
        expect(tokenizer.decode(sequence, { skipSpecialTokens, cleanUpTokenizationSpaces: false })).toBe(
          expected,
        );
      }),
      { numRuns: 300 },
    );
  });

  it('the concatenated stream equals decode(ids) and every piece is complete text', () => {
    fc.assert(
      fc.property(ids(), fc.boolean(), (sequence, skipSpecialTokens) => {
        const stream = tokenizer.createDecodeStream({ skipSpecialTokens });
        let text = '';
        for (const id of sequence) {
          const piece = stream.push(id);
          expect(piece.endsWith('\uFFFD')).toBe(false);
          expect(hasLoneSurrogate(piece)).toBe(false);
          text += piece;
        }
        text += stream.flush();
        expect(text).toBe(
          tokenizer.decode(sequence, { skipSpecialTokens, cleanUpTokenizationSpaces: false }),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('streams multi-byte text token by token without broken characters', () => {
    const text = 'Ünïcödé 한국어 数学 🦀👩‍👩‍👧‍👦 𝔘𝔫𝔦 — done';
    const stream = tokenizer.createDecodeStream();
    const pieces = tokenizer.encode(text, { addSpecialTokens: false }).map((id) => stream.push(id));
    pieces.push(stream.flush());
    expect(pieces.join('')).toBe(tokenizer.decode(tokenizer.encode(text, { addSpecialTokens: false })));
    for (const piece of pieces) expect(piece.includes('\uFFFD')).toBe(false);
  });
});

/** True when `text` holds half of a UTF-16 surrogate pair. */
function hasLoneSurrogate(text: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}
