import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chiSquare, chiSquareCritical } from '../test/reference.js';
import { seededUniform } from './seeded-uniform.js';

const MASK64 = (1n << 64n) - 1n;

/** SplitMix64 written directly with BigInt: the counter-th output of the generator seeded with `seed`. */
function splitMix64(seed: number, counter: number): bigint {
  let state = BigInt(seed >>> 0);
  let z = 0n;
  for (let i = 0; i <= counter; i++) {
    state = (state + 0x9e3779b97f4a7c15n) & MASK64;
    z = state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    z ^= z >> 31n;
  }
  return z;
}

function toUniform(z: bigint): number {
  return Number(z >> 11n) / 2 ** 53;
}

describe('seededUniform', () => {
  it('reproduces published SplitMix64 test vectors', () => {
    // Widely published outputs: seed 0 → 0xE220A8397B1DCDAF; seed 1234567 → the five values below.
    expect(seededUniform(0, 0)).toBe(toUniform(0xe220a8397b1dcdafn));
    const seed1234567 = [
      6457827717110365317n,
      3203168211198807973n,
      9817491932198370423n,
      4593380528125082431n,
      16408922859458223821n,
    ];
    for (const [counter, z] of seed1234567.entries())
      expect(seededUniform(1234567, counter)).toBe(toUniform(z));
  });

  it('equals the counter-th SplitMix64 output for any seed and counter', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.nat(300), (seed, counter) => {
        expect(seededUniform(seed, counter)).toBe(toUniform(splitMix64(seed, counter)));
      }),
      { numRuns: 300, seed: 20_251_121 },
    );
  });

  it('is a pure function of (seed, counter), in [0, 1), uniform over seeds and over counters', () => {
    expect(seededUniform(42, 7)).toBe(seededUniform(42, 7));
    expect(seededUniform(42 + 2 ** 32, 7)).toBe(seededUniform(42, 7));
    const numBins = 100;
    const bySeed = new Array<number>(numBins).fill(0);
    const byCounter = new Array<number>(numBins).fill(0);
    const draws = 100_000;
    for (let i = 0; i < draws; i++) {
      const a = seededUniform(i, 0);
      const b = seededUniform(99, i);
      expect(a >= 0 && a < 1 && b >= 0 && b < 1).toBe(true);
      bySeed[Math.floor(a * numBins)]++;
      byCounter[Math.floor(b * numBins)]++;
    }
    const expected = new Array<number>(numBins).fill(draws / numBins);
    for (const observed of [bySeed, byCounter]) {
      const { stat, df } = chiSquare(observed, expected);
      expect(stat).toBeLessThan(chiSquareCritical(df));
    }
  });
});
