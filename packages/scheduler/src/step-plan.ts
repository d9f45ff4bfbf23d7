import type { KvCacheManager, KvSwapPlan, ScheduledStep } from '@ferrum/interfaces';
import { BatchBuffers, fit } from './batch-buffers.js';
import type { ResolvedSchedulerOptions } from './scheduler-options.js';
import type { Sequence } from './sequence.js';

/**
 * Token written where a placeholder goes: a valid id for any vocabulary, so a row whose placeholder is
 * never filled (its sequence was aborted, the row is discarded) still runs safely.
 */
const PLACEHOLDER_TOKEN = 0;

/**
 * What one step decided, kept until `complete()` applies it. Decisions are collected first (decodes and
 * prefill chunks in priority order) and written into the batch afterwards, decodes first, because a
 * sequence's slot list is only stable once every allocation and preemption of the step is done.
 * The scheduler keeps two plans, each with its own batch buffers, and alternates: a step in flight keeps
 * its plan and arrays while the next is planned.
 *
 * Planning a steady decode step allocates nothing (V8's scavenges pause the step loop): arrays and the
 * step handed out are reused from step to step, and lists are refilled by index with counts or trimmed to
 * length, never emptied with `length = 0`, which drops an array's backing store (so `decodes` and
 * `prefills` keep stale entries past their counts).
 */
export class StepPlan {
  stepNo = 0;
  /** Budgets left while planning. */
  numTokensLeft = 0;
  numKvTokensLeft = 0;
  /** Seats of maxNumSeqs taken by running sequences (a prompt sequence counts its future forks). */
  numSeats = 0;
  readonly buffers: BatchBuffers;
  private readonly decodes: Sequence[] = [];
  private numDecodes = 0;
  private readonly prefills: Sequence[] = [];
  private readonly prefillLengths: Int32Array;
  private numPrefills = 0;
  /** Batch order of the last {@link StepPlan.emit}: sequence b computes `numNew[b]` tokens. */
  readonly seqs: Sequence[] = [];
  readonly seqIds: string[] = [];
  readonly numNew: Int32Array;
  /** First sample index of sequence b, or -1 when its chunk ends mid-prompt; it has `numSamples[b]`. */
  readonly sampleBase: Int32Array;
  readonly numSamples: Int32Array;
  /** Sequence that receives each sampled token. */
  readonly sampleTargets: Sequence[] = [];
  /** Rare (preemption and resumption): emptied only when not empty. */
  readonly swapIn: KvSwapPlan[] = [];
  readonly swapOut: KvSwapPlan[] = [];
  readonly preempted: string[] = [];
  /** Rows holding a placeholder and the sample index (of the step in flight) each takes. */
  private readonly placeholderRows: Int32Array;
  private readonly placeholderSources: Int32Array;
  private numPlaceholderRows = 0;
  private readonly placeholders: { rows: Int32Array; sampleIndices: Int32Array };
  /** The step handed out for this plan: one object, rewritten by each {@link StepPlan.emit}. */
  readonly step: ScheduledStep;

  constructor(
    options: ResolvedSchedulerOptions,
    /** Which of the scheduler's two plans this is; selects each sequence's sampling record. */
    readonly parity: 0 | 1,
  ) {
    this.buffers = new BatchBuffers({
      maxNumTokens: options.maxNumBatchedTokens,
      maxNumSeqs: options.maxNumSeqs,
      maxNumKvTokens: options.maxNumBatchedKvTokens,
      // A prompt sequence samples once per future fork, and it holds a seat for each.
      maxNumSamples: options.maxNumSeqs,
    });
    this.prefillLengths = new Int32Array(options.maxNumSeqs);
    this.numNew = new Int32Array(options.maxNumSeqs);
    this.sampleBase = new Int32Array(options.maxNumSeqs);
    this.numSamples = new Int32Array(options.maxNumSeqs);
    this.placeholderRows = new Int32Array(options.maxNumSeqs);
    this.placeholderSources = new Int32Array(options.maxNumSeqs);
    this.placeholders = {
      rows: this.placeholderRows.subarray(0, 0),
      sampleIndices: this.placeholderSources.subarray(0, 0),
    };
    this.step = {
      batch: this.buffers.view(),
      swapIn: this.swapIn,
      swapOut: this.swapOut,
      preempted: this.preempted,
      seqIds: this.seqIds,
      placeholders: this.placeholders,
    };
  }

  /** Start planning step `stepNo` with full budgets. */
  begin(stepNo: number, options: ResolvedSchedulerOptions, numSeats: number): void {
    this.stepNo = stepNo;
    this.numTokensLeft = options.maxNumBatchedTokens;
    this.numKvTokensLeft = options.maxNumBatchedKvTokens;
    this.numSeats = numSeats;
    this.numDecodes = 0;
    this.numPrefills = 0;
    if (this.swapIn.length > 0) this.swapIn.length = 0;
    if (this.swapOut.length > 0) this.swapOut.length = 0;
    if (this.preempted.length > 0) this.preempted.length = 0;
    this.numPlaceholderRows = 0;
  }

  /** Whether `numTokens` new tokens of `seq` fit the token and kvIndices budgets. */
  fits(seq: Sequence, numTokens: number): boolean {
    return numTokens <= this.numTokensLeft && seq.numComputed + numTokens <= this.numKvTokensLeft;
  }

  /** Largest chunk of `seq`'s remaining tokens the budgets allow (may be 0). */
  chunkFor(seq: Sequence): number {
    const remaining = seq.numTokens + seq.numPlaceholders - seq.numComputed;
    return Math.max(0, Math.min(remaining, this.numTokensLeft, this.numKvTokensLeft - seq.numComputed));
  }

  addDecode(seq: Sequence): void {
    this.take(seq, 1);
    this.decodes[this.numDecodes++] = seq;
  }

  addPrefill(seq: Sequence, numTokens: number): void {
    this.take(seq, numTokens);
    this.prefillLengths[this.numPrefills] = numTokens;
    this.prefills[this.numPrefills++] = seq;
  }

  get isEmpty(): boolean {
    return this.numDecodes === 0 && this.numPrefills === 0;
  }

  /** Whether any sequence of this step still runs (one that ended needs nothing from the step). */
  get hasLiveSequences(): boolean {
    for (let b = 0; b < this.seqs.length; b++) if (this.seqs[b].place === 'running') return true;
    return false;
  }

  /**
   * Write the planned sequences into the buffers, decodes first, then prefill chunks, and count their new
   * positions (and sampled tokens, as placeholders) as in flight. `step` then describes them.
   */
  emit(kv: KvCacheManager): void {
    this.buffers.reset();
    let numTargets = 0;
    for (let i = 0; i < this.numDecodes; i++) {
      numTargets = this.emitSequence(kv, this.decodes[i], 1, i, numTargets);
    }
    for (let i = 0; i < this.numPrefills; i++) {
      const b = this.numDecodes + i;
      numTargets = this.emitSequence(kv, this.prefills[i], this.prefillLengths[i], b, numTargets);
    }
    const numSeqs = this.numDecodes + this.numPrefills;
    this.seqs.length = numSeqs;
    this.seqIds.length = numSeqs;
    this.sampleTargets.length = numTargets;
    const count = this.numPlaceholderRows;
    const { placeholders } = this;
    placeholders.rows = fit(placeholders.rows, this.placeholderRows, count);
    placeholders.sampleIndices = fit(placeholders.sampleIndices, this.placeholderSources, count);
    this.buffers.view();
  }

  /**
   * The step in flight while this one was planned completed with `tokenIds`: write them into the
   * placeholder rows. (Those sequences' sampling records already span the token, appended meanwhile.)
   */
  fillPlaceholders(tokenIds: Int32Array): void {
    for (let k = 0; k < this.numPlaceholderRows; k++) {
      this.buffers.setToken(this.placeholderRows[k], tokenIds[this.placeholderSources[k]]);
    }
  }

  private take(seq: Sequence, numTokens: number): void {
    seq.stepMark = this.stepNo;
    this.numTokensLeft -= numTokens;
    this.numKvTokensLeft -= seq.numComputed + numTokens;
  }

  /** Append `seq` as sequence `b` of the batch; returns the number of sample targets so far. */
  private emitSequence(
    kv: KvCacheManager,
    seq: Sequence,
    numNew: number,
    b: number,
    numTargets: number,
  ): number {
    const { buffers } = this;
    const start = seq.numComputed;
    const end = start + numNew;
    const row = buffers.appendSequence(kv, seq.seqId, seq.tokens, start, end);
    // Past the known tokens lies the one the step in flight samples: this sequence's last row.
    if (end > seq.numTokens) this.addPlaceholder(row, seq);
    seq.numComputed = end;
    seq.numInFlight += numNew;
    this.seqs[b] = seq;
    this.seqIds[b] = seq.seqId;
    this.numNew[b] = numNew;
    if (end < seq.numTokens + seq.numPlaceholders) {
      this.sampleBase[b] = -1;
      this.numSamples[b] = 0;
      return numTargets;
    }
    // A prompt sequence of an n > 1 request samples its last row once per child (each with its own seed).
    const targets = seq.sampleTargets;
    this.sampleBase[b] = numTargets;
    this.numSamples[b] = targets.length;
    seq.sampleIndex = numTargets;
    // Records are prepared before this step's own placeholder is counted: they span the outputs before it.
    for (let i = 0; i < targets.length; i++) {
      buffers.addSample(row, targets[i].prepareRow(this.parity));
      this.sampleTargets[numTargets++] = targets[i];
    }
    seq.numPlaceholders++;
    return numTargets;
  }

  private addPlaceholder(row: number, seq: Sequence): void {
    const k = this.numPlaceholderRows++;
    this.placeholderRows[k] = row;
    this.placeholderSources[k] = seq.sampleIndex;
    this.buffers.setToken(row, PLACEHOLDER_TOKEN);
  }
}
