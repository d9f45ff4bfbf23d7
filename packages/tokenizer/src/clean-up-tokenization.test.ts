import { describe, expect, it } from 'vitest';
import { cleanUpTokenization } from './clean-up-tokenization.js';

describe('cleanUpTokenization', () => {
  it('removes spaces before punctuation and contractions in transformers order', () => {
    expect(cleanUpTokenization("Hello , world ! I do n't know , it 's fine .")).toBe(
      "Hello, world! I don't know, it's fine.",
    );
    expect(cleanUpTokenization("a ' b ?")).toBe("a'b?");
  });
});
