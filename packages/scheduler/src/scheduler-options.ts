import type { KvCacheManager } from '@ferrum/interfaces';
import { FerrumError } from '@ferrum/types';

/** Options of {@link createScheduler}; names follow vLLM's engine arguments in camelCase. */
export interface SchedulerOptions {
  /** Most sequences in one step (and most running at once). A positive integer. */
  readonly maxNumSeqs: number;
  /** Token budget of one step: decodes plus prefill chunks. At least `maxNumSeqs`, so every decode fits. */
  readonly maxNumBatchedTokens: number;
  /** Longest sequence (prompt + output). At most the KV pool's `numSlots`, so any sequence can run alone. */
  readonly maxModelLen: number;
  /** `add` refuses with `queue_full` while this many requests wait to start. Default 1024. */
  readonly maxQueueSize?: number;
  /** What preemption does to a victim's KV: drop it and recompute later (default), or swap it to the host. */
  readonly preemptionMode?: 'recompute' | 'swap';
  /**
   * Fraction of the pool kept free when admitting waiting work (vLLM's watermark), so running decodes are
   * not preempted right after an admission. In [0, 1); default 0.01. Ignored when nothing runs.
   */
  readonly watermark?: number;
  /** Split long prompts over several steps (default true). When false a prompt is prefilled in one step. */
  readonly chunkedPrefill?: boolean;
  /**
   * Capacity of a step's `kvIndices`: the summed context (cached + new tokens) of its sequences. Sequences
   * that would overflow it wait for a later step. Default: `maxNumSeqs × maxModelLen`, capped at
   * `max(2 × numSlots, 2^23)` entries (32 MiB), and never below `maxModelLen`.
   */
  readonly maxNumBatchedKvTokens?: number;
  /** Seed of the stream that draws a seed for requests without `sampling.seed`. Default 0. */
  readonly seed?: number;
}

/** {@link SchedulerOptions} with every default filled in and checked against the pool. */
export interface ResolvedSchedulerOptions {
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  readonly maxModelLen: number;
  readonly maxQueueSize: number;
  readonly preemptionMode: 'recompute' | 'swap';
  /** The watermark in slots. */
  readonly watermarkSlots: number;
  readonly chunkedPrefill: boolean;
  readonly maxNumBatchedKvTokens: number;
  readonly seed: number;
}

const KV_INDICES_CAP = 1 << 23;

/** Fill defaults and validate; throws FerrumError `invalid_argument` naming the first bad option. */
export function resolveSchedulerOptions(
  options: SchedulerOptions,
  kv: KvCacheManager,
): ResolvedSchedulerOptions {
  const { maxNumSeqs, maxNumBatchedTokens, maxModelLen } = options;
  requireInteger('maxNumSeqs', maxNumSeqs, 1);
  requireInteger('maxNumBatchedTokens', maxNumBatchedTokens, maxNumSeqs);
  requireInteger('maxModelLen', maxModelLen, 1);
  if (maxModelLen > kv.numSlots) {
    invalid(
      `maxModelLen (${maxModelLen}) exceeds the KV pool (${kv.numSlots} slots): lower it or enlarge the pool`,
    );
  }
  const chunkedPrefill = options.chunkedPrefill ?? true;
  if (!chunkedPrefill && maxNumBatchedTokens < maxModelLen) {
    invalid(`without chunked prefill maxNumBatchedTokens (${maxNumBatchedTokens}) must be >= maxModelLen`);
  }
  const maxQueueSize = options.maxQueueSize ?? 1024;
  requireInteger('maxQueueSize', maxQueueSize, 0);
  const preemptionMode = options.preemptionMode ?? 'recompute';
  if (preemptionMode !== 'recompute' && preemptionMode !== 'swap') {
    invalid(`preemptionMode must be 'recompute' or 'swap', got ${String(preemptionMode)}`);
  }
  const watermark = options.watermark ?? 0.01;
  if (!(watermark >= 0 && watermark < 1)) invalid(`watermark must be in [0, 1), got ${watermark}`);
  const defaultKv = Math.max(
    maxModelLen,
    Math.min(maxNumSeqs * maxModelLen, Math.max(2 * kv.numSlots, KV_INDICES_CAP)),
  );
  const maxNumBatchedKvTokens = options.maxNumBatchedKvTokens ?? defaultKv;
  requireInteger('maxNumBatchedKvTokens', maxNumBatchedKvTokens, maxModelLen);
  const seed = options.seed ?? 0;
  if (!Number.isSafeInteger(seed)) invalid(`seed must be an integer, got ${seed}`);
  return {
    maxNumSeqs,
    maxNumBatchedTokens,
    maxModelLen,
    maxQueueSize,
    preemptionMode,
    watermarkSlots: Math.ceil(watermark * kv.numSlots),
    chunkedPrefill,
    maxNumBatchedKvTokens,
    seed,
  };
}

function requireInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min)
    invalid(`${name} must be an integer >= ${min}, got ${value}`);
}

function invalid(message: string): never {
  throw new FerrumError('invalid_argument', message);
}
