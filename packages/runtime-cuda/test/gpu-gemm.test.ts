// Native Gemm's paths against an f64 product computed here from the same bf16 inputs: the untuned path (the
// GEMV up to 8 rows: native/kernels/gemv.cu's FMA kernel at 1-2 rows, gemv-mma.cu's tensor-core kernel at
// 3-8; cuBLASLt above), the GEMV at each of its block sizes, and the cuBLASLt and tuned paths, at decode row
// counts on Qwen3-4B's projection shapes (o_proj, qkv, gate|up, down) and tiny ones whose n is not a multiple of
// a block's outputs and whose k is not a multiple of a load round, for f32 and bf16 outputs; and untuned
// prefill-size products on the algorithm tuned at more rows. The gated MLP's fused product (SwiGLU in the GEMV's
// epilogue) against silu(gate) × up of the same reference. Also: the GEMV gives the same bits run to run. On Hopper,
// the skinny GEMM (9-64 rows, native/kernels/gemm-skinny.cu) forced, plain and with SwiGLU, and its rows' bits
// independent of how many rows a product has, across its two stage layouts too.
import { seededRandom } from '@ferrum/types';
import { beforeAll, describe, expect, it } from 'vitest';
import { bf16Value } from '../src/bf16.js';
import { loadNativeAddon, type NativeAddon, type NativeGemmPath } from '../src/native-addon.js';
import { cudaAvailability, differingBits, randomBf16 } from './support.js';

const { available, reason } = await cudaAvailability();
const addon: NativeAddon | null = available ? loadNativeAddon().addon : null;
/** Whether the skinny GEMM runs here (native skinnyGemmAvailable): Hopper, built for sm_90a. */
const probe = addon ? await addon.probe() : null;
const skinny =
  probe?.computeCapability.startsWith('9.') === true &&
  ` ${probe.builtArchitectures} `.includes(' 90a ') &&
  process.env.FERRUM_CUDA_SKINNY_GEMM !== '0';
/** Whether the skinny GEMM takes an n × k product (native skinnyGemmSupports, less the row and pointer checks). */
const skinnyShape = (n: number, k: number) => skinny && n % 128 === 0 && k % 128 === 0 && k >= 256;

const ROWS = [1, 2, 3, 4, 7, 8, 9, 16, 33, 64];
/** The GEMV forced to each of its block sizes at m rows (native gemvRowsPerBlock). */
function gemvBlockSizes(m: number): readonly NativeGemmPath[] {
  if (m > 8) return [];
  return m <= 2 ? ['gemv4', 'gemv8', 'gemv16'] : ['gemv8', 'gemv16', 'gemv32'];
}
/** The same for the fused gate|up product with SwiGLU. */
function swigluBlockSizes(m: number): readonly NativeGemmPath[] {
  return m <= 2 ? ['swiglu4', 'swiglu8'] : ['swiglu8', 'swiglu16'];
}
const SHAPES = [
  { n: 2560, k: 4096, maxRows: 64 },
  { n: 6144, k: 2560, maxRows: 64 },
  { n: 19456, k: 2560, maxRows: 16 },
  { n: 2560, k: 9728, maxRows: 64 },
  { n: 72, k: 64, maxRows: 64 },
  { n: 200, k: 136, maxRows: 64 },
];

// Tolerance of an output element: |got − ref| ≤ ROUNDING·|ref| (bf16 outputs only) + ACCUMULATION·rms(ref).
// - Rounding to a bf16 (8-bit significand) to nearest moves a value by at most half an ulp, 2^-8 of it.
// - f32 accumulation: a thread or tensor-core step sums its products in f32, then partial sums (at most a few
//   hundred: k = 9728 is 76 GEMV load rounds, 608 k16 steps) are added in f32. Each addition errs by at most
//   2^-24 of a running sum, and running sums stay of the order of the outputs' rms (random signs), so even
//   errors that all lean one way (truncating adders) stay under 608 · 2^-23 ≈ 7e-5 of the rms; 1e-3 leaves a
//   margin of over 10.
// A real fault is far larger: one 8-element piece of k dropped or counted twice moves an output by ~√8 · E|x·w|
// ≈ 0.9 here, 6% of the rms at k = 2560 (inputs uniform in [-1, 1), so rms ≈ √k / 3).
const ROUNDING = 2 ** -8;
const ACCUMULATION = 1e-3;

interface Case {
  readonly x: Uint16Array;
  readonly w: Uint16Array;
  /** f64 x · wᵀ for every row of x, [rows][n]. */
  readonly reference: Float64Array;
}

/** Uniform values in [-1, 1) rounded to bf16 (so up to 1 itself), as bits, and their exact values. */
function bf16Values(count: number, random: () => number): { bits: Uint16Array; values: Float32Array } {
  const bits = randomBf16(count, random, -1, 1);
  return { bits, values: Float32Array.from(bits, bf16Value) };
}

function makeCase(rows: number, n: number, k: number, seed: number): Case {
  const random = seededRandom(seed);
  const x = bf16Values(rows * k, random);
  const w = bf16Values(n * k, random);
  const reference = new Float64Array(rows * n);
  for (let col = 0; col < n; col++) {
    const wRow = w.values.subarray(col * k, (col + 1) * k);
    for (let row = 0; row < rows; row++) {
      const xRow = x.values.subarray(row * k, (row + 1) * k);
      let sum = 0; // products of two bf16 are exact in f64, and so are sums this short of 2^53 ulps
      for (let i = 0; i < k; i++) sum += xRow[i]! * wRow[i]!;
      reference[row * n + col] = sum;
    }
  }
  return { x: x.bits, w: w.bits, reference };
}

/** Elements outside the tolerance, with the worst one, for the assertion message. */
function mismatches(got: Float32Array, reference: Float64Array, outF32: boolean): string {
  let squares = 0;
  for (const r of reference) squares += r * r;
  const rms = Math.sqrt(squares / reference.length);
  let bad = 0;
  let worst = '';
  let worstExcess = 0;
  for (let i = 0; i < reference.length; i++) {
    const error = Math.abs(got[i]! - reference[i]!);
    const allowed = (outF32 ? 0 : ROUNDING) * Math.abs(reference[i]!) + ACCUMULATION * rms;
    if (!(error <= allowed)) {
      bad++;
      if (!(error - allowed <= worstExcess)) {
        worstExcess = error - allowed;
        worst = ` (worst: element ${i}, got ${got[i]}, reference ${reference[i]}, allowed ±${allowed})`;
      }
    }
  }
  return bad === 0 ? 'none' : `${bad} of ${reference.length}${worst}`;
}

const silu = (v: number) => v / (1 + Math.exp(-v));

/**
 * silu(gate) × up against the f64 products (gate columns [0, inter), up columns [inter, 2 · inter) of
 * `reference`). The kernel rounds gate, up and silu(gate) to bf16 and the result once more; to first order an
 * error δg in gate moves the result by at most 1.1 · |up| · δg (silu's slope stays under 1.1), one δu in up by
 * |silu(gate)| · δu, and each of the last two roundings by 2^-8 of the result. δg and δu are the product
 * tolerance above (rounding plus accumulation).
 */
function swigluMismatches(got: Float32Array, reference: Float64Array, m: number, inter: number): string {
  let squares = 0;
  for (const r of reference) squares += r * r;
  const rms = Math.sqrt(squares / reference.length);
  let bad = 0;
  let worst = '';
  for (let row = 0; row < m; row++) {
    for (let j = 0; j < inter; j++) {
      const gate = reference[row * 2 * inter + j]!;
      const up = reference[row * 2 * inter + inter + j]!;
      const want = silu(gate) * up;
      const dGate = ROUNDING * Math.abs(gate) + ACCUMULATION * rms;
      const dUp = ROUNDING * Math.abs(up) + ACCUMULATION * rms;
      const allowed =
        1.1 * Math.abs(up) * dGate +
        Math.abs(silu(gate)) * dUp +
        1.1 * dGate * dUp +
        2 * ROUNDING * Math.abs(want);
      const value = got[row * inter + j]!;
      if (!(Math.abs(value - want) <= allowed)) {
        if (bad === 0) {
          worst = ` (first: row ${row}, column ${j}, got ${value}, want ${want}, allowed ±${allowed})`;
        }
        bad++;
      }
    }
  }
  return bad === 0 ? 'none' : `${bad} of ${m * inter}${worst}`;
}

function run(
  path: NativeGemmPath,
  c: Case,
  m: number,
  n: number,
  k: number,
  outF32: boolean,
  iterations = 0,
) {
  return addon!.runGemm(path, c.x.subarray(0, m * k), c.w, m, n, k, outF32, iterations, 0).output;
}

/** A Case made before the enclosing describe's tests run: filled in by its beforeAll, not at collection. */
function caseBeforeAll(rows: number, n: number, k: number, seed: number): Case {
  const c = {} as Case;
  beforeAll(() => {
    Object.assign(c, makeCase(rows, n, k, seed));
  });
  return c;
}

/** The first `rows` rows of x ([rows][k] bf16 bits) repeated to m rows: row r is row r % rows. */
function repeatRows(x: Uint16Array, rows: number, k: number, m: number): Uint16Array {
  const out = new Uint16Array(m * k);
  for (let r = 0; r < m; r++) out.set(x.subarray((r % rows) * k, ((r % rows) + 1) * k), r * k);
  return out;
}

/**
 * Whether each of `got`'s m rows ([m][cols]) has the bits of row r % rows of `base` ([rows][cols]); the first
 * differing row, or null.
 */
function rowsMatchRepeated(got: Float32Array, base: Float32Array, rows: number, cols: number): number | null {
  for (let r = 0; r < got.length / cols; r++) {
    const at = (r % rows) * cols;
    if (differingBits(got.subarray(r * cols, (r + 1) * cols), base.subarray(at, at + cols)) > 0) return r;
  }
  return null;
}

describe.skipIf(!addon)(
  `cuda: GEMV and GEMM paths equal an f64 reference${addon ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(SHAPES)('n $n, k $k', ({ n, k, maxRows }) => {
      const rows = ROWS.filter((m) => m <= maxRows);
      const c = caseBeforeAll(maxRows, n, k, n * 31 + k);

      it.each(rows)('%i rows, f32 and bf16 outputs', (m) => {
        const paths: NativeGemmPath[] = ['auto', ...gemvBlockSizes(m)];
        if (m > 8 && skinnyShape(n, k)) paths.push('skinny');
        for (const path of paths) {
          for (const outF32 of path === 'skinny' ? [false] : [true, false]) {
            const got = run(path, c, m, n, k, outF32);
            expect(mismatches(got, c.reference.subarray(0, m * n), outF32), `${path}, outF32 ${outF32}`).toBe(
              'none',
            );
          }
        }
      });
    });

    describe('paths and determinism (n 2560, k 4096)', () => {
      const n = 2560;
      const k = 4096;
      const c = caseBeforeAll(33, n, k, 7);

      // Gemm::tune picks a block size by timing, so two loads of a model may pick differently: results must not
      // depend on it.
      it('gives the same bits run to run and at every block size from the GEMV', () => {
        for (const m of [1, 2, 3, 5, 8]) {
          for (const outF32 of [true, false]) {
            const [base, ...others] = gemvBlockSizes(m);
            const first = run(base!, c, m, n, k, outF32);
            for (const path of [base!, ...others]) {
              const again = run(path, c, m, n, k, outF32, 3);
              expect(
                differingBits(first, again),
                `${path} against ${base}, ${m} rows, outF32 ${outF32}`,
              ).toBe(0);
            }
          }
        }
      });

      it.each<NativeGemmPath>(['cublas', 'tuned'])('the %s path meets the same reference', (path) => {
        for (const m of [1, 4, 12, 33]) {
          const got = run(path, c, m, n, k, false);
          expect(mismatches(got, c.reference.subarray(0, m * n), false), `${m} rows`).toBe('none');
        }
      });
    });

    // The skinny GEMM's split count follows from the shape alone, so a row's bits do not depend on how many rows the
    // step has (9-64), and match run to run.
    describe.skipIf(!skinny)('the skinny GEMM, row by row (n 2560, k 9728)', () => {
      const n = 2560;
      const k = 9728;
      const c = caseBeforeAll(64, n, k, 23);

      it('gives each row the same bits at 9, 33 and 64 rows, run to run', () => {
        const all = run('skinny', c, 64, n, k, false);
        expect(mismatches(all, c.reference, false)).toBe('none');
        for (const m of [9, 33, 64]) {
          const got = run('skinny', c, m, n, k, false, 3);
          expect(differingBits(got, all.subarray(0, m * n)), `${m} rows`).toBe(0);
        }
      });

      it('refuses an f32 output and a row count outside 9-64', () => {
        expect(() => run('skinny', c, 64, n, k, true)).toThrow(/skinny GEMM does not take/);
        expect(() => run('skinny', c, 8, n, k, false)).toThrow(/skinny GEMM does not take/);
      });
    });

    // Qwen3-4B's gate|up, 152 blocks of 128 columns: past one wave of one block a multiprocessor on an H100, so from
    // 17 rows the kernel takes one-panel stages at two a multiprocessor. Rows repeated from the first 16 (two-panel
    // stages, checked against a reference in the shapes above) must come out with the same bits.
    describe.skipIf(!skinny)('the skinny GEMM past one wave (n 19456, k 2560)', () => {
      const n = 19456;
      const k = 2560;

      it('gives rows past 16 (one-panel stages) the bits of the same rows at 16', () => {
        const random = seededRandom(31);
        const x = randomBf16(16 * k, random, -1, 1);
        const w = randomBf16(n * k, random, -1, 1);
        const base = addon!.runGemm('skinny', x, w, 16, n, k, false, 0, 0).output;
        for (const m of [17, 33, 64]) {
          const got = addon!.runGemm('skinny', repeatRows(x, 16, k, m), w, m, n, k, false, 0, 0).output;
          expect(rowsMatchRepeated(got, base, 16, n), `${m} rows: first differing row`).toBeNull();
        }
      });
    });

    // An untuned product of 1,024 rows or more runs the algorithm tuned for more rows (where cuBLASLt takes it for
    // this shape), as a model's prefill steps do; a small shape keeps the f64 reference cheap.
    describe('an algorithm tuned at more rows (n 72, k 64)', () => {
      const n = 72;
      const k = 64;
      const c = caseBeforeAll(1500, n, k, 11);

      it.each([1024, 1100, 1500])('%i rows, f32 and bf16 outputs', (m) => {
        for (const outF32 of [true, false]) {
          const got = run('shared', c, m, n, k, outF32);
          expect(mismatches(got, c.reference.subarray(0, m * n), outF32), `outF32 ${outF32}`).toBe('none');
        }
      });
    });

    describe.each([
      { inter: 9728, k: 2560 },
      { inter: 36, k: 64 },
      { inter: 100, k: 136 },
    ])('gate|up with SwiGLU fused: inter $inter, k $k', ({ inter, k }) => {
      const n = 2 * inter;
      const c = caseBeforeAll(16, n, k, inter * 17 + k);

      it.each([1, 2, 3, 5, 8])('%i rows, the same bits at every block size', (m) => {
        const reference = c.reference.subarray(0, m * n);
        let first: Float32Array | null = null;
        for (const path of ['swiglu', ...swigluBlockSizes(m)] as const) {
          const got = addon!.runGemm(path, c.x.subarray(0, m * k), c.w, m, n, k, false, 0, 0).output;
          expect(swigluMismatches(got, reference, m, inter), path).toBe('none');
          first ??= got;
          expect(differingBits(got, first), path).toBe(0);
        }
      });

      it.skipIf(!skinnyShape(n, k))('9 and 16 rows on the skinny GEMM', () => {
        for (const m of [9, 16]) {
          const got = addon!.runGemm('swiglu', c.x.subarray(0, m * k), c.w, m, n, k, false, 0, 0).output;
          expect(swigluMismatches(got, c.reference.subarray(0, m * n), m, inter), `${m} rows`).toBe('none');
        }
      });

      // As for the plain product: at inter 9728 the gated grid (152 blocks) passes one wave, and from 17 rows takes
      // one-panel stages; rows repeated from the 16 checked above keep their bits.
      it.skipIf(!skinnyShape(n, k))('rows past 16 on the skinny GEMM: the bits of 16 rows', () => {
        const base = addon!.runGemm('swiglu', c.x.subarray(0, 16 * k), c.w, 16, n, k, false, 0, 0).output;
        for (const m of [17, 33, 64]) {
          const got = addon!.runGemm('swiglu', repeatRows(c.x, 16, k, m), c.w, m, n, k, false, 0, 0).output;
          expect(rowsMatchRepeated(got, base, 16, inter), `${m} rows: first differing row`).toBeNull();
        }
      });
    });
  },
);
