// The fused residual add + RMSNorm kernel (native/kernels/rms-norm.cu) against Hugging Face's bf16 arithmetic,
// computed here in f64: sum = bf16(residual + delta), written back to the residual; output = bf16(weight ·
// bf16(sum / √(mean(sum²) + eps))). Hidden sizes cover each of the kernel's launch shapes: one 16-byte chunk a
// thread (up to 8,192), two (up to 16,384), and the scalar fallback for sizes that are not a multiple of 8.
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { bf16Value, roundToBf16 } from '../src/bf16.js';
import { loadNativeAddon, type NativeAddon } from '../src/native-addon.js';
import { cudaAvailability, randomBf16 } from './support.js';

const { available, reason } = await cudaAvailability();
const addon: NativeAddon | null = available ? loadNativeAddon().addon : null;

const EPS = 1e-6;

interface Reference {
  readonly residual: Float64Array;
  readonly output: Float64Array;
}

function reference(
  residual: Uint16Array,
  delta: Uint16Array,
  weight: Uint16Array,
  rows: number,
  hidden: number,
) {
  const out: Reference = {
    residual: new Float64Array(rows * hidden),
    output: new Float64Array(rows * hidden),
  };
  for (let r = 0; r < rows; r++) {
    let squares = 0;
    for (let i = 0; i < hidden; i++) {
      const at = r * hidden + i;
      // As PyTorch adds two bf16 tensors: in f32, then to bf16. The f64 sum is exact; roundToBf16 takes it to f32
      // first (the f32 addition's result), then to bf16.
      const sum = roundToBf16(bf16Value(residual[at]!) + bf16Value(delta[at]!));
      out.residual[at] = sum;
      squares += sum * sum;
    }
    const inv = 1 / Math.sqrt(squares / hidden + EPS);
    for (let i = 0; i < hidden; i++) {
      const at = r * hidden + i;
      out.output[at] = roundToBf16(bf16Value(weight[i]!) * roundToBf16(out.residual[at]! * inv));
    }
  }
  return out;
}

describe.skipIf(!addon)(
  `cuda: add + RMSNorm equals Hugging Face's bf16 arithmetic${addon ? '' : ` (skipped: ${reason})`}`,
  () => {
    it.each([
      { hidden: 64, rows: 3 },
      { hidden: 2560, rows: 5 },
      { hidden: 8192, rows: 2 },
      { hidden: 8200, rows: 2 },
      { hidden: 12288, rows: 3 },
      { hidden: 2050, rows: 4 },
    ])('hidden $hidden, $rows rows', ({ hidden, rows }) => {
      const random = seededRandom(hidden * 31 + rows);
      const residual = randomBf16(rows * hidden, random, -2, 2);
      const delta = randomBf16(rows * hidden, random, -1, 1);
      const weight = randomBf16(hidden, random, 0.5, 1.5);
      const got = addon!.runAddRmsNorm(residual, delta, weight, rows, hidden, EPS, 0);
      const want = reference(residual, delta, weight, rows, hidden);

      // The sum takes the same two roundings on both sides: the same bits.
      let residualDiffs = 0;
      for (let i = 0; i < rows * hidden; i++) if (got.residual[i] !== want.residual[i]) residualDiffs++;
      expect(residualDiffs).toBe(0);

      // The kernel's f32 sum of squares differs from the f64 one by ~1e-6 of it at most, so bf16(sum · inv) can
      // land on the other side of a rounding boundary: rarely (~2 · 2^8 · 5e-7 of elements), and then by one bf16
      // step (≤ 2^-7 of the value); with the last rounding on each side, at most 2^-6 of the output. A wrong
      // rounding or scale moves far more elements, or by more.
      let differing = 0;
      let beyondStep = 0;
      for (let i = 0; i < rows * hidden; i++) {
        const g = got.output[i]!;
        const w = want.output[i]!;
        if (g === w) continue;
        differing++;
        if (Math.abs(g - w) > 2 ** -6 * Math.abs(w)) beyondStep++;
      }
      expect(beyondStep).toBe(0);
      expect(differing).toBeLessThanOrEqual(Math.ceil(rows * hidden * 0.001));
    });

    it('rejects mismatched lengths with a clear error', () => {
      const bits = new Uint16Array(64);
      expect(() => addon!.runAddRmsNorm(bits, bits, bits, 2, 64, EPS, 0)).toThrow(
        /residual must hold 128 values/,
      );
    });
  },
);
