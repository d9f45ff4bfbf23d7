import type { FinishReason, ForwardBatch, SamplingParams } from '@ferrum/types';
import { defineToken, type SpecificationVersion } from './injection-token.js';
import type { KvSwapPlan } from './kv-cache-manager.js';

/** Life-cycle states of a sequence (DESIGN.md §3). */
export type SequenceState = 'waiting' | 'prefilling' | 'decoding' | 'preempted' | 'finished' | 'aborted';

/** A request as the scheduler sees it. */
export interface SequenceRequest {
  /** Unique id of the request; its sequences are `requestId` (n = 1) or `${requestId}#${i}` (n > 1). */
  readonly requestId: string;
  readonly promptTokenIds: Int32Array;
  readonly sampling: SamplingParams;
  /** Lower runs first. */
  readonly priority: number;
  /** Monotonic arrival time (ms); ties in priority go to the earlier arrival. */
  readonly arrivalTimeMs: number;
  /** Token ids that end the sequence (model EOS ids plus the request's stop ids). */
  readonly eosTokenIds: readonly number[];
  /**
   * Ask the runtime for this request's logits on the host (copied into each sampled row's
   * `RowSampling.needsHostLogits`), e.g. because a custom LogitsProcessor applies. Default false.
   */
  readonly needsHostLogits?: boolean;
}

/** What a step did to one sequence, returned by {@link Scheduler.complete}. */
export interface SequenceUpdate {
  readonly requestId: string;
  readonly seqId: string;
  /** Index of the sequence among the request's `n`. */
  readonly index: number;
  /** Token appended this step (-1 when the step only advanced a prefill chunk). */
  readonly tokenId: number;
  /** Position of the sampled row in the step's `ForwardResult.tokens`, or -1. */
  readonly sampleIndex: number;
  /** Prompt tokens the prefix cache supplied when the request was first admitted (usage reporting). */
  readonly numCachedPromptTokens: number;
  /** Set when the sequence finished this step (EOS / stop id → `stop`, token limit → `length`). */
  readonly finishReason?: FinishReason;
}

/**
 * Rows of a step planned while the previous step was still running (overlap), whose token is the one the
 * previous step samples for the same sequence: row `rows[k]` of `batch.tokenIds` takes token
 * `sampleIndices[k]` of the previous step's `ForwardResult.tokens`. Until then the rows hold a valid
 * placeholder id (0). `Scheduler.complete(previous, tokens)` writes them, so a runtime may also read
 * them from the previous step's device-side tokens (`ForwardBatch.previousTokens`).
 *
 * The sampling record of such a row counts the placeholder among its `outputTokenIds` from the start (the
 * last entry, written by `complete(previous)`): a step launched before that sees the same number of outputs
 * as one launched after it, so seeded draws agree.
 */
export interface StepPlaceholders {
  readonly rows: Int32Array;
  readonly sampleIndices: Int32Array;
}

/**
 * One planned step. Its typed arrays are the scheduler's preallocated buffers: a scheduler that supports
 * async scheduling alternates two sets, so a step's arrays stay valid until the first `schedule()` after
 * its `complete()` (and the step built meanwhile has its own); otherwise until the next `schedule()`.
 * The step object itself (with its batch, lists and placeholders) has the same lifetime: a scheduler may
 * hand out the same objects, rewritten, for a later step, so that planning allocates nothing.
 */
export interface ScheduledStep {
  readonly batch: ForwardBatch;
  /** Copies the runtime must run before `forward`: swap-ins of resumed sequences. */
  readonly swapIn: readonly KvSwapPlan[];
  /** Copies the runtime must run before `forward` (and before `swapIn`): swap-outs of preempted sequences. */
  readonly swapOut: readonly KvSwapPlan[];
  /** Sequences preempted while planning this step (recompute or swap). */
  readonly preempted: readonly string[];
  /**
   * Sequence ids in batch order (sequence b of the batch is `seqIds[b]`). For `n > 1` the prompt is
   * prefilled once by a sequence whose id is the request id; it samples its last row once per child
   * `${requestId}#${i}` (each row with the child's own seed) and forks into them on `complete`.
   */
  readonly seqIds: readonly string[];
  /**
   * Rows waiting for the previous step's sampled tokens; empty or absent when nothing was in flight.
   * Such a step runs after `complete(previous)` filled them, or earlier on a runtime that takes them from
   * the previous step's device-side samples (`ForwardBatch.previousTokens`).
   */
  readonly placeholders?: StepPlaceholders;
}

/** Counters of a scheduler. */
export interface SchedulerStats {
  readonly numWaiting: number;
  readonly numRunning: number;
  readonly numSwapped: number;
  readonly numPreemptions: number;
}

/**
 * Continuous-batching policy: decides which sequences run each step and how many of their tokens, and
 * builds the {@link ForwardBatch}. Owns sequence state; asks the KvCacheManager for slots.
 *
 * Async scheduling (overlap, when `supportsAsyncScheduling`): the engine may call `schedule()` once while
 * the previous step N runs, then `complete(N)` (which fills the new step's placeholders), then run the new
 * step. A sequence that ends in N (stop id, length, abort, `finish`) while the new step already holds a
 * row for it keeps that row: the runtime computes it, `complete()` ignores it, and its KV was freed when
 * the sequence ended. Frees take effect at once, also for sequences of a step in flight: their slots go
 * only to steps planned later, which the runtime runs after it (`KvStorage` orders work with `forward`).
 */
export interface Scheduler {
  readonly specificationVersion: SpecificationVersion;
  /**
   * True when `schedule()` may be called while one step is not completed yet (see above). Absent or
   * false: the engine completes each step before planning the next.
   */
  readonly supportsAsyncScheduling?: boolean;
  /** Queue a request. Throws FerrumError `queue_full` or `context_length_exceeded`. */
  add(request: SequenceRequest): void;
  /** Abort every sequence of a request in any live state, freeing its KV at once. Returns false if unknown. */
  abort(requestId: string): boolean;
  /** Finish one sequence early (e.g. a stop string matched), freeing or caching its KV. */
  finish(seqId: string, reason: FinishReason): void;
  /**
   * Plan the next step, or null when nothing can run (while a step is in flight: nothing until it
   * completes). A step may have no sequences but swap-outs or preemptions to carry out. Throws FerrumError
   * `invalid_argument` when too many steps are not completed: one (two with async scheduling) may be,
   * besides steps whose sequences all ended after their forward settled (e.g. failed), which need no
   * `complete`.
   */
  schedule(): ScheduledStep | null;
  /**
   * Apply a finished step: `tokenIds[i]` is the token sampled for `step.batch.sampleRows[i]`. Appends tokens,
   * commits KV to the prefix cache, detects EOS / length, frees finished sequences, and writes the tokens
   * into the placeholders of the step planned while this one ran. Steps complete in the order planned.
   * The returned array and its updates belong to the scheduler and are valid until the next `complete()`
   * (it may rewrite them rather than allocate).
   */
  complete(step: ScheduledStep, tokenIds: Int32Array): readonly SequenceUpdate[];
  /** State of a sequence, or undefined once it is gone (ended sequences stay visible until the next `schedule()`). */
  stateOf(seqId: string): SequenceState | undefined;
  /** True while any sequence is waiting, running or swapped. */
  hasWork(): boolean;
  stats(): SchedulerStats;
}

export const SCHEDULER = defineToken<Scheduler>('SchedulerV1');
