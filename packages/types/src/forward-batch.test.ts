import { describe, expect, it } from 'vitest';
import { numOutputTokensOf } from './forward-batch.js';

describe('numOutputTokensOf', () => {
  it('takes the count when the producer set it, without reading the outputs', () => {
    const row = {
      numOutputTokens: 3,
      get outputTokenIds(): Int32Array {
        throw new Error('outputs read');
      },
    };
    expect(numOutputTokensOf(row)).toBe(3);
  });

  it('falls back to the outputs length', () => {
    expect(numOutputTokensOf({ outputTokenIds: Int32Array.of(4, 5) })).toBe(2);
  });
});
