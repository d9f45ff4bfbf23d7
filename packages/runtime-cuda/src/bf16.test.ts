import { describe, expect, it } from 'vitest';
import { bf16Bits, bf16Value, roundToBf16 } from './bf16.js';

// Expected bits from the format (1 sign, 8 exponent, 7 fraction bits): 1 is 0x3f80, one ulp at 1 is 2^-7.
describe('bf16 rounding', () => {
  it('gives the format bits of exact values and reads them back', () => {
    expect(bf16Bits(1)).toBe(0x3f80);
    expect(bf16Bits(-1.5)).toBe(0xbfc0);
    expect(bf16Bits(0)).toBe(0);
    expect(bf16Value(0x3f80)).toBe(1);
    expect(bf16Value(0xbfc0)).toBe(-1.5);
  });

  it('rounds to nearest, ties to even', () => {
    expect(roundToBf16(1 + 2 ** -8)).toBe(1); // half an ulp above 1 (even): down
    expect(roundToBf16(1 + 3 * 2 ** -8)).toBe(1 + 2 ** -6); // half an ulp above 1 + 2^-7 (odd): up
    expect(roundToBf16(1 + 2 ** -8 + 2 ** -12)).toBe(1 + 2 ** -7); // past the tie: up
    expect(roundToBf16(-(1 + 2 ** -8 + 2 ** -12))).toBe(-(1 + 2 ** -7));
  });
});
