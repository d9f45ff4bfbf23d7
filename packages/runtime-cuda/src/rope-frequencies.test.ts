import { describe, expect, it } from 'vitest';
import { ropeInverseFrequencies } from './rope-frequencies.js';

describe('ropeInverseFrequencies', () => {
  it('is theta^(-2i/d) for the default rope', () => {
    const inv = ropeInverseFrequencies({ type: 'default', theta: 10000 }, 8);
    for (const [i, want] of [1, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75].entries()) {
      expect(inv[i]).toBeCloseTo(want, 6);
    }
  });

  it('applies llama3 scaling: high frequencies kept, low ones divided by factor, a blend between', () => {
    const rope = {
      type: 'llama3',
      theta: 500000,
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositionEmbeddings: 64,
    } as const;
    const plain = ropeInverseFrequencies({ type: 'default', theta: 500000 }, 16);
    const scaled = ropeInverseFrequencies(rope, 16);
    for (let i = 0; i < 8; i++) {
      const wavelength = (2 * Math.PI) / plain[i];
      if (wavelength < 16) expect(scaled[i]).toBeCloseTo(plain[i], 7);
      else if (wavelength > 64) expect(scaled[i]).toBeCloseTo(plain[i] / 8, 9);
      else {
        const smooth = (64 / wavelength - 1) / 3;
        expect(scaled[i]).toBeCloseTo((1 - smooth) * (plain[i] / 8) + smooth * plain[i], 7);
      }
    }
  });
});
