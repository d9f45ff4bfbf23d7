import { createRequire } from 'node:module';
import type { DType, ModelConfig } from '@ferrum/types';

/**
 * SIMD paths the native kernels come in; which ones run depends on the CPU and the build. `amx` (Intel AMX tiles)
 * and `avx512bf16` multiply bf16 weights as bf16 × bf16 products, with each projection's input rounded to bf16 as
 * transformers' bf16 modules receive it; the others multiply in f32.
 */
export type CpuSimdPath = 'amx' | 'avx512bf16' | 'avx512' | 'avx2' | 'neon' | 'scalar';

/** Every {@link CpuSimdPath}, best first. */
export const CPU_SIMD_PATHS: readonly CpuSimdPath[] = [
  'amx',
  'avx512bf16',
  'avx512',
  'avx2',
  'neon',
  'scalar',
];

/** Paths that multiply bf16 weights as bf16 products. */
export const BF16_PRODUCT_PATHS: readonly CpuSimdPath[] = ['amx', 'avx512bf16'];

/** What the addon's `probe()` reports. */
export interface NativeProbe {
  /** The best usable f32 path (what a model gets unless told otherwise). */
  readonly simd: CpuSimdPath;
  /** The path a model computing in bf16 gets: the best with bf16 products, or `simd` where there is none. */
  readonly bf16Simd: CpuSimdPath;
  /** Every usable path, best first (those with bf16 products first); always ends with "scalar". */
  readonly usableSimd: readonly CpuSimdPath[];
  /** CPU features detected at run time ("avx2", "avx512f", "avx512_bf16", "neon", ...). */
  readonly features: readonly string[];
  /** CPUs this process may run on. */
  readonly numCpus: number;
}

/** One weight tensor: where it lies on disk, or only its name and shape for dummy weights. */
export interface NativeTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly file?: string;
  readonly byteOffset?: number;
  readonly byteLength?: number;
}

export interface NativeLoadOptions {
  readonly config: ModelConfig;
  readonly tensors: readonly NativeTensor[];
  readonly dummy: boolean;
  readonly seed: number;
  readonly numSlots: number;
  readonly numHostSlots: number;
  readonly maxBatchTokens: number;
  readonly maxBatchSeqs: number;
  /** 0 means every usable CPU. */
  readonly numThreads: number;
  /** Empty string picks the best usable path for the compute dtype (`bf16Products`). */
  readonly simd: CpuSimdPath | '';
  /** With no path named: multiply bf16 weights as bf16 products where the CPU has a path for it. */
  readonly bf16Products: boolean;
  /** Round RoPE inverse frequencies to bf16 (see `backendOptions.ropeFrequencies`). */
  readonly ropeBf16Frequencies: boolean;
}

export interface NativeModelDescription {
  readonly simd: CpuSimdPath;
  readonly numThreads: number;
  readonly numSlots: number;
  readonly numHostSlots: number;
  readonly weightBytes: number;
}

/**
 * A loaded model inside the addon. Promises reject with an Error carrying a FerrumErrorCode in `code`.
 * Arrays passed in must stay untouched until the returned Promise settles.
 */
export interface NativeModel {
  /**
   * One step. `rowModes[i]` is a bit set per sampled row: 1 = copy its logits to `outLogits` (rows in
   * order), 2 = greedy: argmax into `outTokens[i]` and its log-probability into `outLogprobs[i]` (others
   * get -1 and NaN).
   */
  forward(
    tokenIds: Int32Array,
    positions: Int32Array,
    qIndptr: Int32Array,
    kvIndptr: Int32Array,
    kvIndices: Int32Array,
    slotMapping: Int32Array,
    sampleRows: Int32Array,
    rowModes: Int32Array,
    numSeqs: number,
    numTokens: number,
    outTokens: Int32Array,
    outLogprobs: Float32Array,
    outLogits: Float32Array,
  ): Promise<void>;
  copySlots(src: Int32Array, dst: Int32Array): Promise<void>;
  swapOut(deviceSlots: Int32Array, hostSlots: Int32Array): Promise<void>;
  swapIn(hostSlots: Int32Array, deviceSlots: Int32Array): Promise<void>;
  describe(): NativeModelDescription;
  /** Drops the model; memory is freed once in-flight work finished. */
  dispose(): void;
}

/** Everything `build/Release/ferrum_cpu.node` exports. */
export interface NativeAddon {
  probe(): NativeProbe;
  loadModel(options: NativeLoadOptions): Promise<NativeModel>;
  /**
   * One path's elementwise kernel on one row: `softmax` of `x` or `siluMul` (x = silu(x) × up) in place, or
   * `sumExp` (Σ exp(x[i] - shift) over the entries that are not NaN). For tests and benchmarks of the kernels
   * themselves; throws a TypeError for an unusable path or bad arguments.
   */
  runElementwise(simd: CpuSimdPath, op: 'softmax', x: Float32Array): void;
  runElementwise(simd: CpuSimdPath, op: 'siluMul', x: Float32Array, up: Float32Array): void;
  runElementwise(simd: CpuSimdPath, op: 'sumExp', x: Float32Array, shift: number): number;
}

/** The addon, or why it could not be loaded. */
export type NativeAddonLoad =
  | { readonly ok: true; readonly addon: NativeAddon }
  | { readonly ok: false; readonly reason: string };

export const NATIVE_BUILD_MISSING = 'native build missing: run pnpm --filter @ferrum/runtime-cpu build';

// Same relative path from src/ (tests) and dist/ (builds).
const ADDON_PATH = '../build/Release/ferrum_cpu.node';

let cached: NativeAddonLoad | undefined;

/** Loads the addon once. The only place that touches the `.node` file; never throws. */
export function loadNativeAddon(): NativeAddonLoad {
  if (cached !== undefined) return cached;
  const require = createRequire(import.meta.url);
  try {
    cached = { ok: true, addon: require(ADDON_PATH) as NativeAddon };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    cached = {
      ok: false,
      reason:
        code === 'MODULE_NOT_FOUND'
          ? NATIVE_BUILD_MISSING
          : `cannot load the native addon: ${(error as Error).message}`,
    };
  }
  return cached;
}
