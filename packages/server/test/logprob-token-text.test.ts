import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type HfTokenizer, loadTokenizer } from '@ferrum/tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SequenceTokenTexts } from '../src/logprob-token-text.js';
import { TINY_MODEL_DIR } from './helpers/tiny-model.js';

const REPLACEMENT = '\uFFFD';
const TEXT = 'Hello world, café 🙂 naïve 你好 done.';
const shared = join(resolve(import.meta.dirname, '../../..'), '..', 'shared', 'models', 'tokenizers');
const sharedPresent = existsSync(shared);

/**
 * The tokenizers under test: the repo's fixture and, when ../shared is there, real ones of each family;
 * `splitsCharacters`: some character of {@link TEXT} takes several tokens (byte fallback, byte-level pieces).
 */
interface Case {
  readonly name: string;
  readonly dir: string;
  /** How the vocabulary writes a leading space. */
  readonly spaceMarker: string;
  /** A word-start token of the vocabulary, as text. */
  readonly word: string;
  readonly real: boolean;
  readonly splitsCharacters: boolean;
}

const CASES: Case[] = [
  {
    name: 'fixture (tiny qwen3, byte-level BPE)',
    dir: TINY_MODEL_DIR,
    spaceMarker: 'Ġ',
    word: ' w',
    real: false,
    splitsCharacters: true,
  },
  {
    name: 'llama2 (sentencepiece, byte fallback)',
    dir: join(shared, 'llama2'),
    spaceMarker: '▁',
    word: ' world',
    real: true,
    splitsCharacters: true,
  },
  {
    name: 'mistral-7b-v0.1 (sentencepiece)',
    dir: join(shared, 'mistral-7b-v0.1'),
    spaceMarker: '▁',
    word: ' world',
    real: true,
    splitsCharacters: false,
  },
  {
    name: 'qwen3 (byte-level BPE)',
    dir: join(shared, 'qwen3'),
    spaceMarker: 'Ġ',
    word: ' world',
    real: true,
    splitsCharacters: false,
  },
  {
    name: 'gpt2 (byte-level BPE)',
    dir: join(shared, 'gpt2'),
    spaceMarker: 'Ġ',
    word: ' world',
    real: true,
    splitsCharacters: true,
  },
];

for (const c of CASES) {
  const skip = c.real && !sharedPresent;
  describe.skipIf(skip)(`logprob token text, ${c.name}${skip ? ' (skipped: ../shared absent)' : ''}`, () => {
    let tokenizer: HfTokenizer;
    let prompt: number[];
    let ids: number[];
    /** Each generated token's text, as logprobs report it. */
    let texts: string[];
    beforeAll(async () => {
      tokenizer = (await loadTokenizer(c.dir))!;
      prompt = tokenizer.encode('Say:', { addSpecialTokens: true });
      ids = tokenizer.encode(` ${TEXT}`, { addSpecialTokens: false });
      const sequence = new SequenceTokenTexts(tokenizer, prompt);
      texts = ids.map((id) => {
        const text = sequence.textOf(id);
        sequence.advance(id);
        return text;
      });
    });
    afterAll(async () => {
      await tokenizer?.dispose();
    });

    it('gives each token the text it adds, so the texts join to the decoded output', () => {
      const whole = tokenizer.decode([...prompt, ...ids], { cleanUpTokenizationSpaces: false });
      const before = tokenizer.decode(prompt, { cleanUpTokenizationSpaces: false });
      expect(whole.startsWith(before)).toBe(true);
      expect(texts.join('')).toBe(whole.slice(before.length));
      expect(texts.join('')).toContain(TEXT);
    });

    it('keeps the leading space of word-start tokens', () => {
      const pieces = ids.map((id) => tokenizer.idToToken(id)!);
      const wordStarts = pieces.flatMap((piece, i) => (piece.startsWith(c.spaceMarker) ? [i] : []));
      expect(wordStarts.length).toBeGreaterThan(3);
      for (const i of wordStarts) expect(texts[i].startsWith(' ')).toBe(true);
      // Whatever came before, a word-start token reads with its space (as a top alternative anywhere the
      // text is not mid-character: there it would also add the U+FFFD the cut character becomes).
      const word = tokenizer.encode(`Hello${c.word}`, { addSpecialTokens: false }).at(-1)!;
      expect(tokenizer.idToToken(word)).toBe(c.spaceMarker + c.word.trimStart());
      const sequence = new SequenceTokenTexts(tokenizer, prompt);
      for (const id of ids.slice(0, 5)) {
        expect(sequence.textOf(word)).toBe(c.word);
        sequence.advance(id);
      }
    });

    it("gives a character split over several tokens to the token that completes it (vLLM's rule)", () => {
      // No token reports half a character (U+FFFD): the ones before the completing token report "".
      for (const text of texts) expect(text).not.toContain(REPLACEMENT);
      const empty = ids.filter((_, i) => texts[i] === '');
      for (const id of empty) expect(tokenizer.decode([id])).toContain(REPLACEMENT);
      if (c.splitsCharacters) expect(empty.length).toBeGreaterThan(0);
    });
  });
}

describe('logprob token text without a tokenizer', () => {
  it("reports vLLM's token_id:N", () => {
    expect(new SequenceTokenTexts(null, [1, 2]).textOf(42)).toBe('token_id:42');
  });
});
