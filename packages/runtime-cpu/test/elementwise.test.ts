import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';

// The tables' softmax, SiLU · up and sum of exponentials against the same functions in f64 (Math.exp), on every
// usable path. Lengths run past several vector widths so that every tail length (1-15 lanes) is met.
const addon = loadNativeAddon();
const paths = addon.ok ? addon.addon.probe().usableSimd : [];
const LENGTHS = Array.from({ length: 40 }, (_, i) => i + 1).concat([63, 64, 65, 127, 128, 129, 1000]);

function randomRow(n: number, random: () => number, spread: number): Float32Array {
  return Float32Array.from({ length: n }, () => (random() * 2 - 1) * spread);
}

/** Largest |got - want| / |want| over a row (want never 0 here). */
function maxRelativeError(got: Float32Array, want: readonly number[]): number {
  return Math.max(...want.map((value, i) => Math.abs(got[i] - value) / Math.abs(value)));
}

function softmaxF64(x: Float32Array): number[] {
  const max = Math.max(...x);
  const e = Array.from(x, (v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

const siluMulF64 = (g: number, u: number) => (g / (1 + Math.exp(-g))) * u;

describe.skipIf(!addon.ok)(`elementwise kernels${addon.ok ? '' : ` (skipped: ${addon.reason})`}`, () => {
  if (!addon.ok) return;
  const { runElementwise } = addon.addon;

  describe.each(paths)('%s', (simd) => {
    it('softmax: every element within 4e-6 of f64 (relative), for every tail length', () => {
      const random = seededRandom(11);
      for (const n of LENGTHS) {
        const x = randomRow(n, random, 30);
        const want = softmaxF64(x);
        runElementwise(simd, 'softmax', x);
        expect(maxRelativeError(x, want), `n = ${n}`).toBeLessThan(4e-6);
      }
    });

    it('softmax: scores ~100 below the max weigh nothing (no NaN, no infinity), the rest still sums to 1', () => {
      const x = Float32Array.from([
        0, -100, -1e30, -3, 0, -150, 1, -100, -90, -2, -1, 0, 0, -200, -100, -100, -88,
      ]);
      const want = softmaxF64(x);
      runElementwise(simd, 'softmax', x);
      for (let i = 0; i < x.length; i++) {
        if (want[i] < 1e-30) expect(x[i]).toBeLessThan(1e-36);
        else expect(Math.abs(x[i] - want[i]) / want[i]).toBeLessThan(4e-6);
      }
    });

    it('siluMul: within 1e-6 of f64 (relative) over [-20, 20], for every tail length', () => {
      const random = seededRandom(12);
      for (const n of LENGTHS) {
        const gate = randomRow(n, random, 20);
        const up = randomRow(n, random, 3);
        const want = Array.from(gate, (g, i) => siluMulF64(g, up[i]));
        runElementwise(simd, 'siluMul', gate, up);
        expect(maxRelativeError(gate, want), `n = ${n}`).toBeLessThan(1e-6);
      }
    });

    it('sumExp: within 1e-6 of f64 (relative) over a vocabulary-sized row and every tail length, NaN skipped', () => {
      const random = seededRandom(13);
      for (const n of [...LENGTHS, 151_936]) {
        const x = randomRow(n, random, 20);
        if (n > 3) x[n - 2] = Number.NaN;
        const shift = x
          .filter((v) => !Number.isNaN(v))
          .reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);
        const want = Array.from(x).reduce((sum, v) => (Number.isNaN(v) ? sum : sum + Math.exp(v - shift)), 0);
        const got = runElementwise(simd, 'sumExp', x, shift);
        expect(Math.abs(got - want) / want, `n = ${n}`).toBeLessThan(1e-6);
      }
    });

    it('siluMul: saturates to 0 and to x · up far out, and keeps NaN', () => {
      const gate = Float32Array.from([-100, -1000, 100, 1000, Number.NaN, -1e30, 1e30, 0]);
      const up = Float32Array.from([2, 2, 2, 2, 1, 1, 1, 5]);
      runElementwise(simd, 'siluMul', gate, up);
      expect(Math.abs(gate[0])).toBeLessThan(1e-35);
      expect(Math.abs(gate[1])).toBeLessThan(1e-35);
      expect(gate[2]).toBe(200);
      expect(gate[3]).toBe(2000);
      expect(gate[4]).toBeNaN();
      expect(Math.abs(gate[5])).toBeLessThan(1e-7);
      expect(gate[6]).toBe(Math.fround(1e30));
      expect(gate[7]).toBe(0);
    });
  });

  it('rejects a path this CPU lacks and mismatched arrays', () => {
    expect(() => runElementwise('no-such-path' as 'scalar', 'softmax', new Float32Array(4))).toThrow(
      TypeError,
    );
    expect(() => runElementwise('scalar', 'siluMul', new Float32Array(4), new Float32Array(3))).toThrow(
      TypeError,
    );
    expect(() => runElementwise('scalar', 'softmax', new Float32Array(0))).toThrow(TypeError);
  });
});
