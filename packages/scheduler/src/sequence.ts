import type { SequenceRequest, SequenceState } from '@ferrum/interfaces';
import type { RowSampling } from '@ferrum/types';
import { createSamplingRecord, type SamplingRecord } from './sampling-record.js';

/** Where a sequence is kept: which queue, or none (dormant before a fork, or gone). */
export type SequencePlace = 'waiting' | 'running' | 'none';

/** What the sequences of one request share. */
export interface RequestGroup {
  readonly request: SequenceRequest;
  /** Admission counter: breaks ties between requests with equal priority and arrival time. */
  readonly order: number;
  /** Token ids that stop a sequence. */
  readonly stopTokenIds: readonly number[];
  /** Every sequence of the request: its prompt sequence and, for `n > 1`, the `n` forked ones. */
  readonly sequences: readonly Sequence[];
  /** Prompt tokens the prefix cache supplied when the request was first admitted; -1 before that. */
  numCachedPromptTokens: number;
}

/**
 * One sequence: its tokens and how far its KV is computed. The scheduler's work on it is always
 * "compute positions [numComputed, numTokens + numPlaceholders)"; the step that reaches the end samples the
 * next token.
 *
 * ```
 * tokens: | prompt              | output      | placeholders |  spare (sized for the longest output) |
 *         0             numPromptTokens   numTokens                                       tokens.length
 * KV:     | completed steps          | steps in flight (numInFlight) | to compute |
 *         0                    numCompleted                    numComputed
 * ```
 *
 * With overlap, a step is planned while the previous one runs: positions it computes count in
 * `numComputed` at once (vLLM's `num_computed_tokens`), and a token it samples is a placeholder until it
 * completes (at most one: only one step is in flight while planning), so the next step can already
 * compute that position. Only completed positions (`numCompleted`) are committed to the prefix cache.
 *
 * For `n > 1` the request's prompt sequence (id = request id) prefills the prompt and, when it samples,
 * forks into its `children` (ids `${requestId}#${i}`), which wait dormant until then and share its KV.
 */
export class Sequence {
  state: SequenceState = 'waiting';
  place: SequencePlace = 'none';
  /** Known tokens: the prompt and the sampled outputs of completed steps. */
  numTokens: number;
  /** KV positions computed, or being computed by planned steps not completed yet. */
  numComputed = 0;
  /** Positions of `numComputed` that belong to steps not completed yet. */
  numInFlight = 0;
  /** Tokens that steps not completed yet sample: they follow `numTokens` and are unknown until then. */
  numPlaceholders = 0;
  /** Index among the sampled rows of its step of the latest row planned to sample this sequence. */
  sampleIndex = -1;
  /** True while preempted to the host tier. */
  swapped = false;
  /** Device slots a swap-in must provide (set when swapped out). */
  numSwappedSlots = 0;
  /** State to take after a swap-in. */
  resumeState: 'prefilling' | 'decoding' = 'prefilling';
  /** Number of the last step that planned or preempted this sequence; such a sequence is left alone. */
  stepMark = -1;
  /** Dormant sequences to fork into when this prompt sequence samples (`n > 1` only), else null. */
  children: Sequence[] | null = null;
  /** The prompt sequence a dormant child waits on, else null. */
  parent: Sequence | null = null;
  readonly tokens: Int32Array;
  readonly numPromptTokens: number;
  /**
   * Sampling records, one per batch buffer: steps alternate between two buffers, so a step in flight keeps
   * its record while the next step is planned with the other.
   */
  readonly rows: readonly [SamplingRecord, SamplingRecord];
  private readonly ownTargets: readonly Sequence[] = [this];

  constructor(
    readonly seqId: string,
    readonly group: RequestGroup,
    /** Index among the request's `n` sequences; -1 for the prompt sequence of an `n > 1` request. */
    readonly index: number,
    capacity: number,
    seed: number,
  ) {
    const prompt = group.request.promptTokenIds;
    this.tokens = new Int32Array(capacity);
    this.tokens.set(prompt);
    this.numTokens = prompt.length;
    this.numPromptTokens = prompt.length;
    this.rows = [
      createSamplingRecord(group.request, seed, this.tokens, prompt.length),
      createSamplingRecord(group.request, seed, this.tokens, prompt.length),
    ];
  }

  get priority(): number {
    return this.group.request.priority;
  }

  get isLive(): boolean {
    return this.state !== 'finished' && this.state !== 'aborted';
  }

  /** Slots of maxNumSeqs this sequence takes while running: a prompt sequence counts its future forks. */
  get numSeats(): number {
    return this.children === null ? 1 : this.children.length;
  }

  /** Sequences that sample from this one's last row: its children, or itself. */
  get sampleTargets(): readonly Sequence[] {
    return this.children ?? this.ownTargets;
  }

  /** Whether the next work of this running sequence is a one-token decode (maybe of a placeholder). */
  get decodesNext(): boolean {
    return this.state === 'decoding' || this.numPlaceholders > 0;
  }

  /**
   * Whether a step may be planned for this sequence before the step in flight completes. Not when that
   * step samples a token that forks it (`n > 1`: the children take over) or that is its last allowed one:
   * `tokens` is sized so that the length limit is reached exactly when `numTokens` fills it.
   */
  get canRunAhead(): boolean {
    return (
      this.numPlaceholders === 0 ||
      (this.children === null && this.numTokens + this.numPlaceholders < this.tokens.length)
    );
  }

  /** Positions whose KV completed steps wrote (what the prefix cache may take). */
  get numCompleted(): number {
    return this.numComputed - this.numInFlight;
  }

  /**
   * Point the sampling record of batch buffer `parity` at the outputs before the token this sequence samples
   * in a step built there: the known ones, then the placeholder of the step in flight, if any. That slot of
   * `tokens` is written when the step completes, so the record sees the token then; its length is right at
   * once, because a runtime that takes the placeholder on the device reads the record before that (seeded
   * draws depend on the number of outputs).
   */
  prepareRow(parity: number): RowSampling {
    const row = this.rows[parity];
    row.numOutputTokens = this.numTokens + this.numPlaceholders - this.numPromptTokens;
    return row;
  }

  /** Set the state of this sequence and of its dormant children, which mirror it until the fork. */
  setState(state: SequenceState): void {
    this.state = state;
    if (this.children !== null) for (const child of this.children) child.state = state;
  }
}

/** Scheduling order: priority (lower first), then arrival, then admission order, then index. */
export function compareSequences(a: Sequence, b: Sequence): number {
  const ra = a.group.request;
  const rb = b.group.request;
  return (
    ra.priority - rb.priority ||
    ra.arrivalTimeMs - rb.arrivalTimeMs ||
    a.group.order - b.group.order ||
    a.index - b.index
  );
}
