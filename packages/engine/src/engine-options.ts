import type { DType, LoadFormat } from '@ferrum/types';

/** Which backend to run on; `auto` picks the best whose probe succeeds (cuda, metal, then cpu). */
export type DeviceChoice = 'auto' | 'cpu' | 'cuda' | 'metal' | (string & {});

/** Options of {@link createEngine}; names follow vLLM's engine arguments in camelCase. */
export interface EngineOptions {
  /** Model directory in Hugging Face layout (`config.json`, `*.safetensors`, tokenizer files). */
  readonly model: string;
  /** Name reported by the server (`/v1/models`); defaults to the directory's base name. */
  readonly servedModelName?: string;
  readonly device?: DeviceChoice;
  readonly dtype?: DType | 'auto';
  readonly loadFormat?: LoadFormat;
  /** Most sequences in one step. Default 256 (CPU: 32). */
  readonly maxNumSeqs?: number;
  /** Token budget of one step (prefill chunks + decodes). Default 2048. */
  readonly maxNumBatchedTokens?: number;
  /** Longest prompt + output; defaults to the model's `max_position_embeddings`. */
  readonly maxModelLen?: number;
  /** KV pool size in tokens; when absent the backend sizes it (GPU: from `gpuMemoryUtilization`). */
  readonly maxKvTokens?: number;
  readonly gpuMemoryUtilization?: number;
  /** Radix prefix cache. Default true. */
  readonly enablePrefixCaching?: boolean;
  /** Preemption mode under KV pressure. Default `recompute`. */
  readonly preemptionMode?: 'recompute' | 'swap';
  /** Host swap tier size in tokens (for `swap` preemption). */
  readonly swapSpaceTokens?: number;
  /** Requests waiting beyond this are refused with `queue_full`. Default 1024. */
  readonly maxQueueSize?: number;
  /** CPU worker threads; 0 = all cores. */
  readonly numThreads?: number;
  /** Seed for dummy weights and unseeded requests. */
  readonly seed?: number;
  /** Plan step N + 1 while step N runs (vLLM's async scheduling). Default true. */
  readonly asyncScheduling?: boolean;
  /** Disable CUDA graphs (GPU backends). */
  readonly enforceEager?: boolean;
  /** Backend-specific knobs passed through to `loadModel`. */
  readonly backendOptions?: Readonly<Record<string, unknown>>;
  /** Receives one-line log messages (backend choice, KV size, fallbacks). Default: none. */
  readonly log?: (message: string) => void;
}

/** Counters and latency samples an engine keeps (the server renders them as Prometheus metrics). */
export interface EngineMetrics {
  readonly numRequestsRunning: number;
  readonly numRequestsWaiting: number;
  readonly numRequestsSwapped: number;
  /** Fraction of KV slots in use by live sequences, 0..1. */
  readonly kvCacheUsage: number;
  readonly promptTokensTotal: number;
  readonly generationTokensTotal: number;
  readonly prefixCacheQueriesTotal: number;
  readonly prefixCacheHitsTotal: number;
  readonly numPreemptionsTotal: number;
  readonly requestSuccessTotal: Readonly<Record<'stop' | 'length' | 'abort' | 'error', number>>;
  /** Histograms as raw bucketed counts in seconds: bucket upper bounds and cumulative counts. */
  readonly timeToFirstTokenSeconds: Histogram;
  readonly interTokenLatencySeconds: Histogram;
  readonly e2eRequestLatencySeconds: Histogram;
  readonly requestQueueTimeSeconds: Histogram;
}

/** A fixed-bucket histogram snapshot. */
export interface Histogram {
  readonly buckets: readonly number[];
  /** counts[i] = observations ≤ buckets[i] (cumulative); the last entry is +Inf. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}
