import type { DType, ModelConfig } from './model-config.js';

/** Every step of the built-in sampling chain, for a backend that runs all of it on its device. */
export const DEVICE_SAMPLING_OPS = [
  'greedy',
  'temperature',
  'top_k',
  'top_p',
  'min_p',
  'penalties',
  'logit_bias',
  'logprobs',
  'top_logprobs',
] as const;

/** The most alternatives (`logprobs: n`) a backend listing `top_logprobs` finds on its device; OpenAI's limit. */
export const MAX_DEVICE_TOP_LOGPROBS = 20;

/**
 * A step of the built-in sampling chain a backend can run on its device. `logprobs` is the sampled token's
 * log-probability (`logprobs: 0`); `top_logprobs` the `n` most likely alternatives too (`logprobs: n`, up to
 * {@link MAX_DEVICE_TOP_LOGPROBS}, returned in `ForwardResult.topLogprobs`). Without it, or past that limit,
 * a row asking for alternatives takes its logits to the host.
 */
export type DeviceSamplingOp = (typeof DEVICE_SAMPLING_OPS)[number];

/**
 * What the engine may rely on from a backend. A flat record (ggml-style); features follow these fields,
 * never the backend's name.
 */
export interface BackendCapabilities {
  /** False when the backend cannot run here; `reason` then says why in one line. */
  readonly available: boolean;
  readonly reason?: string;
  /** Human-readable device name ("Intel Xeon (AVX-512, 2 threads)", "NVIDIA H100 80GB"). */
  readonly device: string;
  /** Preference among available backends; higher wins, 0 means never pick automatically. */
  readonly score: number;
  readonly dtypes: readonly DType[];
  readonly totalMemoryBytes: number;
  readonly freeMemoryBytes: number;
  readonly maxBatchTokens: number;
  readonly deviceSampling: readonly DeviceSamplingOp[];
  readonly cudaGraphs: boolean;
  readonly pagedAttention: boolean;
  readonly tensorParallelSize: number;
  /**
   * The runtime accepts `ForwardBatch.previousTokens`, and `forward()` may be called again before the previous
   * call's Promise settles (steps run in call order). Absent: false.
   */
  readonly previousTokens?: boolean;
  /**
   * With `previousTokens`: a placeholder row sampled on the runtime counts the token it takes (the previous
   * step's sample, its newest output) in its repetition, presence and frequency penalties, so its sampling record
   * needs no value for it. Absent: false (steps with penalties then wait for the tokens before them).
   */
  readonly previousTokenPenalties?: boolean;
  /** SIMD or architecture features in use ("avx2", "avx512f", "sm_90a"). */
  readonly features: readonly string[];
  /** Backend-specific extras; never relied on by the engine. */
  readonly backendOptions?: Readonly<Record<string, unknown>>;
}

/** Where the weights come from. `dummy` fills random weights of the right shapes (benchmarks). */
export type LoadFormat = 'safetensors' | 'dummy';

/** Everything a backend needs to build a {@link ModelInfo} and its executor. */
export interface ModelLoadSpec {
  /** Directory with `config.json` and `*.safetensors` (may hold only `config.json` for `dummy`). */
  readonly modelDir: string;
  readonly config: ModelConfig;
  readonly loadFormat: LoadFormat;
  /** Compute dtype; defaults to the backend's best for the checkpoint. */
  readonly dtype?: DType;
  /** Size of the KV token pool in tokens; when absent the backend sizes it from memory. */
  readonly maxKvTokens?: number;
  /** Fraction of device memory the backend may use (weights + KV + workspaces). */
  readonly gpuMemoryUtilization?: number;
  /** Upper bound on tokens per forward (sizes workspaces). */
  readonly maxBatchTokens: number;
  /** Upper bound on sequences per forward. */
  readonly maxBatchSeqs: number;
  /** Seed of dummy weights. */
  readonly seed?: number;
  /** Worker threads for CPU backends; 0 means all cores. */
  readonly numThreads?: number;
  /** Backend-specific knobs. */
  readonly backendOptions?: Readonly<Record<string, unknown>>;
}

/** Facts about a loaded model. */
export interface ModelInfo {
  readonly config: ModelConfig;
  /** dtype the weights are held in on the device. */
  readonly weightDtype: DType;
  /** Number of KV slots in the device pool (one slot = one token of every layer). */
  readonly numKvSlots: number;
  /** Number of KV slots in the host swap tier (0 when the backend has none). */
  readonly numHostKvSlots: number;
  readonly maxBatchTokens: number;
  readonly maxBatchSeqs: number;
  readonly backend: string;
}

/** The capabilities of a backend that cannot run here, with the one-line reason. */
export function unavailableCapabilities(reason: string, device = 'none'): BackendCapabilities {
  return {
    available: false,
    reason,
    device,
    score: 0,
    dtypes: [],
    totalMemoryBytes: 0,
    freeMemoryBytes: 0,
    maxBatchTokens: 0,
    deviceSampling: [],
    cudaGraphs: false,
    pagedAttention: false,
    tensorParallelSize: 0,
    features: [],
  };
}
