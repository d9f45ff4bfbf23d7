import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ForwardBatch, ModelConfig } from '@ferrum/types';

/** What the native probe reports (native/addon.cc, ProbeWorker). */
export interface NativeProbe {
  readonly available: boolean;
  readonly reason: string;
  readonly name: string;
  readonly computeCapability: string;
  readonly totalMemoryBytes: number;
  readonly freeMemoryBytes: number;
  readonly multiProcessorCount: number;
  readonly driverVersion: number;
  readonly runtimeVersion: number;
  /** CUDA architectures compiled into this build ("90a", "80 86 89 90a"). */
  readonly builtArchitectures: string;
}

/** Model dimensions as native code sees them (native/load-spec.cc reads these fields by name). */
export type NativeShape = Pick<
  ModelConfig,
  | 'vocabSize'
  | 'hiddenSize'
  | 'intermediateSize'
  | 'numLayers'
  | 'numHeads'
  | 'numKvHeads'
  | 'headDim'
  | 'rmsNormEps'
  | 'attentionBias'
  | 'qkNorm'
  | 'tieWordEmbeddings'
>;

/** Everything native loadModel needs (parsed by native/load-spec.cc). */
export interface NativeLoadSpec {
  readonly shape: NativeShape;
  readonly maxPositionEmbeddings: number;
  /** RoPE inverse frequencies, headDim / 2 entries. */
  readonly invFreq: Float32Array;
  readonly arenaBytes: number;
  readonly embedOffset: number;
  readonly finalNormOffset: number;
  /** -1 when lm_head is tied to the embedding. */
  readonly lmHeadOffset: number;
  /** numLayers × 10 byte offsets (see LAYER_FIELDS in weight-layout.ts); -1 for absent tensors. */
  readonly layerOffsets: Float64Array;
  readonly files: readonly string[];
  /** Per tensor 5 numbers: file index, file offset, byte length, source dtype (0 bf16, 1 f16, 2 f32), arena offset. */
  readonly loads: Float64Array;
  /** Per fill 4 numbers: arena offset, bf16 element count, uniform scale (0: constant), constant value. */
  readonly fills: Float64Array;
  readonly seed: number;
  readonly maxBatchTokens: number;
  readonly maxBatchSeqs: number;
  readonly maxSampleRows: number;
  /** 0: size the pool from gpuMemoryUtilization. */
  readonly maxKvTokens: number;
  readonly gpuMemoryUtilization: number;
  readonly hostKvBytes: number;
  readonly device: number;
  /** Never capture or replay decode CUDA graphs. */
  readonly enforceEager: boolean;
  /** Host threads poll while steps run instead of sleeping (native/host-spin.h). */
  readonly spinWait: boolean;
}

/** The packed sampling chain of a step (see sampling-plan.ts). */
export interface NativeSampling {
  readonly rowFloats: Float32Array;
  readonly rowInts: Int32Array;
  readonly adjOffsets: Int32Array;
  readonly adjIds: Int32Array;
  readonly adjPre: Float32Array;
  readonly adjPost: Float32Array;
  readonly adjFlags: Int32Array;
  readonly allowedOffsets: Int32Array;
  readonly allowedIds: Int32Array;
}

/** A step as native forward() reads it: the ForwardBatch's arrays as given, with the sampling chain packed. */
export interface NativeBatch
  extends Pick<
    ForwardBatch,
    | 'tokenIds'
    | 'positions'
    | 'qIndptr'
    | 'kvIndptr'
    | 'kvIndices'
    | 'slotMapping'
    | 'sampleRows'
    | 'previousTokens'
  > {
  readonly numSeqs: number;
  readonly numTokens: number;
  readonly sampling: NativeSampling | null;
}

export interface NativeForwardResult {
  /** Sampled tokens; -1 for rows not sampled on the device, NOTHING_TO_SAMPLE where every token was masked. */
  readonly tokens: Int32Array;
  readonly logprobs?: Float32Array;
  readonly logits?: Float32Array;
  readonly logitsRows?: Int32Array;
  /** ForwardResult.topLogprobs: present when a row sampled on the device asked for alternatives. */
  readonly topLogprobs?: { readonly tokenIds: Int32Array; readonly logprobs: Float32Array };
}

export interface NativeExecutorInfo {
  readonly numSlots: number;
  readonly numHostSlots: number;
  readonly weightBytes: number;
  readonly kvPoolBytes: number;
  /** Steps replayed from a captured decode graph so far. */
  readonly graphSteps: number;
  /**
   * Prefill attention launches (one a layer) whose kv splits were merged inside thread-block clusters rather than by
   * the combine kernel (Hopper; FERRUM_CUDA_CLUSTER_SPLITS).
   */
  readonly clusterMergedLaunches: number;
  /** Decode graphs captured so far (one per batch-size bucket used). */
  readonly graphsCaptured: number;
  /**
   * Steps outside the decode graphs replayed from a graph of their layout, captured the second time a layout ran
   * (repeated prompt lengths, agent turns over one prefix; off with enforceEager or FERRUM_CUDA_STEP_GRAPHS=0).
   */
  readonly stepGraphSteps: number;
  /** Graphs of repeated step layouts captured so far (at most 32 kept at once, least recently used evicted). */
  readonly stepGraphsCaptured: number;
  /**
   * GPU time of all forward steps so far, in seconds: CUDA events around each step's stream work (upload,
   * kernels, output copies). Against wall time it separates device time from host overhead.
   */
  readonly gpuStepSeconds: number;
  /** Whether host threads poll while steps run (the load spec's `spinWait`). */
  readonly spinWait: boolean;
}

/** A loaded model (native/native-executor.cc). Every method settles from the executor's worker thread. */
export interface NativeExecutor {
  forward(batch: NativeBatch): Promise<NativeForwardResult>;
  copySlots(src: Int32Array, dst: Int32Array): Promise<void>;
  swapOut(deviceSlots: Int32Array, hostSlots: Int32Array): Promise<void>;
  swapIn(hostSlots: Int32Array, deviceSlots: Int32Array): Promise<void>;
  dispose(): Promise<void>;
  info(): NativeExecutorInfo;
  /** Polls (blocking the JS thread) until a result waits for delivery or `maxMicros` pass; whether one waits. */
  spinUntilSettled(maxMicros: number): boolean;
}

/**
 * Which implementation `runGemm` uses: native Gemm's choice for an untuned shape, its choice after tuning the
 * shape, its choice after tuning the product at more rows (`shared`: the next power of two above m, from 1,024,
 * whose algorithm an untuned shape of 1,024 rows or more takes where cuBLASLt accepts it), cuBLASLt's heuristic
 * choice, the skinny GEMM (9–64 rows on Hopper, where the shape suits it; an error elsewhere), or the GEMV
 * (1–8 rows) at a block size of 4, 8 or 16 outputs (1–2 rows) or 8, 16 or 32 (3–8 rows). The `swiglu` paths run
 * the gated MLP's first product with SwiGLU fused: `w` holds the gate rows then the up rows (n = 2 · inter) and
 * the output is [m][inter], bf16; `swiglu` is Gemm's tuned choice (the GEMV, or the skinny GEMM), `swiglu<rows>`
 * the GEMV at a block size (4 or 8 at 1–2 rows, 8 or 16 at 3–8).
 */
export type NativeGemmPath =
  | 'auto'
  | 'tuned'
  | 'shared'
  | 'cublas'
  | 'skinny'
  | 'gemv4'
  | 'gemv8'
  | 'gemv16'
  | 'gemv32'
  | 'swiglu'
  | 'swiglu4'
  | 'swiglu8'
  | 'swiglu16';

/** What `runGemm` returns. */
export interface NativeGemmRun {
  /** y [m][n], row-major; a bf16 output is widened to f32 (exactly). */
  readonly output: Float32Array;
  /** Median seconds of the timed runs, each started with the weights cold in L2; 0 when none were asked for. */
  readonly medianSeconds: number;
}

/** What `runAddRmsNorm` returns. */
export interface NativeAddRmsNormRun {
  /** residual + delta rounded to bf16, [rows][hidden]: what the kernel wrote back to the residual. */
  readonly residual: Float32Array;
  /** weight · bf16(sum / rms(sum)) rounded to bf16, [rows][hidden]. */
  readonly output: Float32Array;
}

/** Everything the `.node` file exports. Nothing but this module touches the addon. */
export interface NativeAddon {
  probe(): Promise<NativeProbe>;
  loadModel(spec: NativeLoadSpec): Promise<NativeExecutor>;
  /** Device-to-device copy rate in bytes (read + written) per second; blocks the calling thread. */
  measureBandwidth(bytes: number, iterations: number, device: number): number;
  /** bf16 m×n×k cuBLASLt product rate in FLOP/s; blocks the calling thread. */
  measureGemmRate(m: number, n: number, k: number, iterations: number, device: number): number;
  /**
   * Verification and benchmark hook for native Gemm (test/gpu-gemm.test.ts): y = x · wᵀ with x [m][k] and
   * w [n][k] given as bf16 bits (row-major), f32 accumulation, an f32 (`outF32`) or bf16 output, run through
   * `path` on fresh device buffers; `iterations` > 0 also times that many runs. Blocks the calling thread.
   */
  runGemm(
    path: NativeGemmPath,
    x: Uint16Array,
    w: Uint16Array,
    m: number,
    n: number,
    k: number,
    outF32: boolean,
    iterations: number,
    device: number,
  ): NativeGemmRun;
  /**
   * Verification hook for the fused residual add + RMSNorm kernel (test/gpu-rms-norm.test.ts): residual and delta
   * [rows][hidden] and weight [hidden] as bf16 bits; returns the sum written back to the residual and the normalized
   * output, each widened to f32 (exactly). Blocks the calling thread.
   */
  runAddRmsNorm(
    residual: Uint16Array,
    delta: Uint16Array,
    weight: Uint16Array,
    rows: number,
    hidden: number,
    eps: number,
    device: number,
  ): NativeAddRmsNormRun;
  /**
   * Starts (`on`) or stops the profiler's collection, once the device's work so far has completed: with Nsight
   * Compute's `--profile-from-start off`, only the launches in between are profiled (scripts/gpu/profile.sh).
   */
  profilerRange(on: boolean): void;
}

/** The addon, or why it could not be loaded. */
export type AddonLoad = { readonly addon: NativeAddon } | { readonly addon: null; readonly reason: string };

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let cached: AddonLoad | undefined;

/**
 * Load the native addon once: `FERRUM_CUDA_ADDON` if set, else the cmake-js build in this package. Never
 * throws; a missing build or a missing shared library (libcublasLt) becomes a reason.
 */
export function loadNativeAddon(): AddonLoad {
  if (cached) return cached;
  const candidates = [
    process.env.FERRUM_CUDA_ADDON,
    path.join(packageRoot, 'build', 'Release', 'ferrum_cuda.node'),
  ].filter((candidate): candidate is string => typeof candidate === 'string' && candidate.length > 0);
  const require = createRequire(import.meta.url);
  const errors: string[] = [];
  for (const candidate of candidates) {
    try {
      cached = { addon: require(candidate) as NativeAddon };
      return cached;
    } catch (error) {
      const code = (error as { code?: string }).code;
      errors.push(
        code === 'MODULE_NOT_FOUND' ? `${candidate} not built` : `${candidate}: ${(error as Error).message}`,
      );
    }
  }
  cached = { addon: null, reason: `native addon unavailable (${errors.join('; ')})` };
  return cached;
}
