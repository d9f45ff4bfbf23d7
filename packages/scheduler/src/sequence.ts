import type { SequenceRequest, SequenceState } from '@ferrum/interfaces';
import type { RowSampling } from '@ferrum/types';

/** Where a sequence is kept: which queue, or none (dormant before a fork, or gone). */
export type SequencePlace = 'waiting' | 'running' | 'none';

/** The per-step sampling record of a sequence, rewritten in place each time it samples. */
export type MutableRowSampling = { -readonly [K in keyof RowSampling]: RowSampling[K] };

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
 * "compute positions [numComputed, numTokens)"; the step that reaches `numTokens` samples the next token.
 *
 * ```
 * tokens: | prompt              | output      |  spare (sized once for the longest allowed output) |
 *         0             numPromptTokens   numTokens                                   tokens.length
 * KV:     | computed (numComputed slots) | to compute |
 * ```
 *
 * For `n > 1` the request's prompt sequence (id = request id) prefills the prompt and, when it samples,
 * forks into its `children` (ids `${requestId}#${i}`), which wait dormant until then and share its KV.
 */
export class Sequence {
  state: SequenceState = 'waiting';
  place: SequencePlace = 'none';
  numTokens: number;
  numComputed = 0;
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
  readonly row: MutableRowSampling;
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
    this.row = {
      requestId: group.request.requestId,
      params: group.request.sampling,
      seed,
      promptTokenIds: this.tokens.subarray(0, prompt.length),
      outputTokenIds: this.tokens.subarray(prompt.length, prompt.length),
      needsHostLogits: group.request.needsHostLogits ?? false,
    };
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

  /** Refresh the sampling record's output view before this sequence samples. */
  prepareRow(): RowSampling {
    this.row.outputTokenIds = this.tokens.subarray(this.numPromptTokens, this.numTokens);
    return this.row;
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
