// Decode GEMM paths side by side on the device: for Qwen3-4B's four layer products and decode row counts M,
// the median time of each path of native Gemm (untuned: the GEMV at M <= 8, else cuBLASLt's heuristic choice;
// cuBLASLt; the tuned winner: for the GEMV, its fastest block size; gate|up also with SwiGLU fused), weights cold
// in L2, as weight-stream rates against the copy ceiling.
//   usage: tsx scripts/gpu/bench-gemm.ts <out.json> [rows: a comma-separated list of M, default 1,2,4,8,16,32,64]
//          [paths: a comma-separated list of runGemm paths instead of the default ones]
import { writeFileSync } from 'node:fs';
import { measureDeviceCeilings } from '../../packages/runtime-cuda/src/index.js';
import { loadNativeAddon, type NativeGemmPath } from '../../packages/runtime-cuda/src/native-addon.js';
import { seededRandom } from '../../packages/types/src/index.js';

const [outFile, rowsArg, pathsArg] = process.argv.slice(2);
const ROWS = (rowsArg ?? '1,2,4,8,16,32,64').split(',').map(Number);
if (!ROWS.every((m) => Number.isInteger(m) && m > 0)) {
  throw new Error(`rows must list positive integers, got "${rowsArg}"`);
}
const load = loadNativeAddon();
if (load.addon === null) throw new Error(`no CUDA addon: ${load.reason}`);
const { addon } = load;
const { bandwidthBytesPerSecond } = measureDeviceCeilings();

const SHAPES = [
  { name: 'qkv', n: 6144, k: 2560 },
  { name: 'o', n: 2560, k: 4096 },
  { name: 'gate|up', n: 19456, k: 2560 },
  { name: 'down', n: 2560, k: 9728 },
];
const ITERATIONS = 20;

/** bf16 bits of small random values (|v| < 2^-4), so products stay finite. */
function randomBf16(count: number, seed: number): Uint16Array {
  const out = new Uint16Array(count);
  const random = seededRandom(seed);
  for (let i = 0; i < count; i++) {
    const bits = Math.floor(random() * 2 ** 16);
    out[i] = 0x3c00 | (bits & 0x807f);
  }
  return out;
}

const rows: { shape: string; m: number; path: NativeGemmPath; us: number; ofCopy: number }[] = [];
console.log(`copy ceiling ${(bandwidthBytesPerSecond / 1e9).toFixed(0)} GB/s`);
console.log('| shape | M | path | µs | weight GB/s | of copy |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const { name, n, k } of SHAPES) {
  const w = randomBf16(n * k, 7);
  for (const m of ROWS) {
    const x = randomBf16(m * k, 11 + m);
    const defaults: NativeGemmPath[] = m <= 8 ? ['auto', 'cublas', 'tuned'] : ['cublas', 'tuned'];
    // The gated MLP's product as decode runs it: the GEMV with SwiGLU fused (cuBLASLt needs a SwiGLU kernel more).
    if (name === 'gate|up' && m <= 8) defaults.push('swiglu');
    const paths = pathsArg === undefined ? defaults : (pathsArg.split(',') as NativeGemmPath[]);
    for (const path of paths) {
      const { medianSeconds } = addon.runGemm(path, x, w, m, n, k, false, ITERATIONS, 0);
      const rate = (n * k * 2) / medianSeconds;
      const ofCopy = rate / bandwidthBytesPerSecond;
      rows.push({ shape: name, m, path, us: medianSeconds * 1e6, ofCopy });
      console.log(
        `| ${name} | ${m} | ${path} | ${(medianSeconds * 1e6).toFixed(1)} | ${(rate / 1e9).toFixed(0)} | ${(100 * ofCopy).toFixed(0)}% |`,
      );
    }
  }
}
writeFileSync(outFile, JSON.stringify({ bandwidthBytesPerSecond, rows }, null, 1));
