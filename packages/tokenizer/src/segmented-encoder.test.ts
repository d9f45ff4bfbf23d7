import { describe, expect, it } from 'vitest';
import { AddedTokenSplitter } from './added-token-splitter.js';
import { SegmentCache } from './segment-cache.js';
import { type BatchEncoder, SegmentedEncoder } from './segmented-encoder.js';
import type { TokenizerJson } from './transformers-pipeline.js';

const token = (
  id: number,
  content: string,
  flags: Partial<NonNullable<TokenizerJson['added_tokens']>[number]> = {},
) => ({
  id,
  content,
  special: true,
  ...flags,
});

/** A byte-level file with three added tokens, one the prefix of another. */
const JSON_OF: TokenizerJson = {
  added_tokens: [token(900, '<|a|>'), token(901, '<|a|>x'), token(902, '<|end|>')],
  normalizer: { type: 'NFC' },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split' }, { type: 'ByteLevel' }] },
  model: { type: 'BPE' },
};

describe('AddedTokenSplitter', () => {
  it('splits at added tokens, leftmost-longest, leaving no empty pieces', () => {
    const splitter = AddedTokenSplitter.of(JSON_OF)!;
    expect(splitter.split('<|a|>xy<|a|> z<|end|><|end|>')).toEqual([901, 'y', 900, ' z', 902, 902]);
    expect(splitter.split('no tokens here')).toEqual(['no tokens here']);
    expect(splitter.split('')).toEqual([]);
    expect(splitter.split('a.b*<|end|>(')).toEqual(['a.b*', 902, '(']);
  });

  it('is not made where pieces may depend on their neighbours or their place', () => {
    const withToken = (flags: object) => ({ ...JSON_OF, added_tokens: [token(900, '<|a|>', flags)] });
    expect(AddedTokenSplitter.of(withToken({}))).not.toBeNull();
    for (const flags of [{ lstrip: true }, { rstrip: true }, { single_word: true }, { normalized: true }]) {
      expect(AddedTokenSplitter.of(withToken(flags))).toBeNull();
    }
    // A normalized added token is fine when nothing normalizes.
    expect(AddedTokenSplitter.of({ ...withToken({ normalized: true }), normalizer: null })).not.toBeNull();
    const metaspace = (scheme: string) => ({
      ...JSON_OF,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: scheme },
    });
    expect(AddedTokenSplitter.of(metaspace('always'))).not.toBeNull();
    expect(AddedTokenSplitter.of(metaspace('first'))).toBeNull();
    expect(AddedTokenSplitter.of({ ...JSON_OF, pre_tokenizer: { type: 'SomethingNew' } })).toBeNull();
    expect(AddedTokenSplitter.of({ ...JSON_OF, model: { type: 'BPE', dropout: 0.1 } })).toBeNull();
    expect(AddedTokenSplitter.of({ ...JSON_OF, added_tokens: [] })).toBeNull();
  });
});

describe('SegmentCache', () => {
  it('drops the least recently used pieces once it holds more ids than its limit', () => {
    const cache = new SegmentCache(5);
    cache.set('a', Int32Array.of(1, 2));
    cache.set('b', Int32Array.of(3, 4));
    expect(cache.get('a')).toEqual(Int32Array.of(1, 2));
    cache.set('c', Int32Array.of(5, 6));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.size).toBe(4);
    cache.set('too long', Int32Array.of(1, 2, 3, 4, 5, 6));
    expect(cache.get('too long')).toBeUndefined();
    expect(cache.size).toBe(4);
  });
});

/** Encodes each character as its code point; records what it was asked; can be told to disagree. */
class CodePointEncoder implements BatchEncoder {
  readonly calls: string[][] = [];
  /** Added to every id of a text holding an added token's content: a tokenizer whose pieces are not independent. */
  skew = 0;

  async encodeMany(texts: readonly string[]): Promise<Int32Array[]> {
    this.calls.push([...texts]);
    return texts.map((text) => {
      const skew = text.includes('<|end|>') ? this.skew : 0;
      return Int32Array.from([...text.replace(/<\|end\|>/g, '\u0386')].map((c) => c.codePointAt(0)! + skew));
    });
  }
}

describe('SegmentedEncoder', () => {
  const splitter = AddedTokenSplitter.of({ ...JSON_OF, added_tokens: [token(0x386, '<|end|>')] })!;
  const ids = (text: string) => [...text.replace(/<\|end\|>/g, '\u0386')].map((c) => c.codePointAt(0)!);

  it('encodes only the pieces it has not seen, after checking its first results against whole encodes', async () => {
    const worker = new CodePointEncoder();
    const encoder = new SegmentedEncoder(splitter, worker);
    let conversation = 'system prompt<|end|>';
    for (let turn = 0; turn < 6; turn++) {
      conversation += `turn ${turn}<|end|>`;
      expect(await encoder.encode(conversation)).toEqual(ids(conversation));
    }
    // Turn 0 sent the whole text and both pieces, turns 1-3 the whole text and the new turn, then only the new turn.
    expect(worker.calls.map((texts) => texts.length)).toEqual([3, 2, 2, 2, 1, 1]);
    expect(worker.calls.at(-1)).toEqual(['turn 5']);
    expect(encoder.cachesPieces).toBe(true);
  });

  it('falls back to whole texts, dropping its cache, when pieces disagree with a whole encode', async () => {
    const worker = new CodePointEncoder();
    worker.skew = 1;
    const encoder = new SegmentedEncoder(splitter, worker);
    const whole = await encoder.encode('a<|end|>b');
    expect(whole).toEqual(ids('a<|end|>b').map((id) => id + 1));
    expect(encoder.cachesPieces).toBe(false);
    await encoder.encode('a<|end|>b<|end|>c');
    expect(worker.calls.at(-1)).toEqual(['a<|end|>b<|end|>c']);
  });
});
