import type { KvCacheManager, KvSwapPlan } from '@ferrum/interfaces';
import { BatchBuffers } from './batch-buffers.js';
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
 * its plan and arrays while the next is planned. All arrays are reused from step to step.
 */
export class StepPlan {
  stepNo = 0;
  /** Budgets left while planning. */
  numTokensLeft = 0;
  numKvTokensLeft = 0;
  /** Seats of maxNumSeqs taken by running sequences (a prompt sequence counts its future forks). */
  numSeats = 0;
  readonly buffers: BatchBuffers;
  readonly decodes: Sequence[] = [];
  readonly prefills: Sequence[] = [];
  private readonly prefillLengths: Int32Array;
  /** Batch order, filled by {@link StepPlan.emit}: sequence b computes `numNew[b]` tokens. */
  readonly seqs: Sequence[] = [];
  readonly seqIds: string[] = [];
  readonly numNew: Int32Array;
  /** First sample index of sequence b, or -1 when its chunk ends mid-prompt; it has `numSamples[b]`. */
  readonly sampleBase: Int32Array;
  readonly numSamples: Int32Array;
  /** Sequence that receives each sampled token. */
  readonly sampleTargets: Sequence[] = [];
  readonly swapIn: KvSwapPlan[] = [];
  readonly swapOut: KvSwapPlan[] = [];
  readonly preempted: string[] = [];
  /** Rows holding a placeholder and the sample index (of the step in flight) each takes. */
  private readonly placeholderRows: Int32Array;
  private readonly placeholderSources: Int32Array;
  private numPlaceholderRows = 0;

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
  }

  /** Start planning step `stepNo` with full budgets. */
  begin(stepNo: number, options: ResolvedSchedulerOptions, numSeats: number): void {
    this.stepNo = stepNo;
    this.numTokensLeft = options.maxNumBatchedTokens;
    this.numKvTokensLeft = options.maxNumBatchedKvTokens;
    this.numSeats = numSeats;
    this.decodes.length = 0;
    this.prefills.length = 0;
    this.seqs.length = 0;
    this.seqIds.length = 0;
    this.sampleTargets.length = 0;
    this.swapIn.length = 0;
    this.swapOut.length = 0;
    this.preempted.length = 0;
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
    this.decodes.push(seq);
  }

  addPrefill(seq: Sequence, numTokens: number): void {
    this.take(seq, numTokens);
    this.prefillLengths[this.prefills.length] = numTokens;
    this.prefills.push(seq);
  }

  get isEmpty(): boolean {
    return this.decodes.length === 0 && this.prefills.length === 0;
  }

  /** Whether any sequence of this step still runs (one that ended needs nothing from the step). */
  get hasLiveSequences(): boolean {
    return this.seqs.some((seq) => seq.place === 'running');
  }

  /**
   * Write the planned sequences into the buffers, decodes first, then prefill chunks, and count their new
   * positions (and sampled tokens, as placeholders) as in flight.
   */
  emit(kv: KvCacheManager): void {
    this.buffers.reset();
    for (const seq of this.decodes) this.emitSequence(kv, seq, 1);
    for (let i = 0; i < this.prefills.length; i++) {
      this.emitSequence(kv, this.prefills[i], this.prefillLengths[i]);
    }
  }

  /** Placeholder rows of the batch and the sample index of the step in flight that each takes. */
  placeholders(): { readonly rows: Int32Array; readonly sampleIndices: Int32Array } {
    const count = this.numPlaceholderRows;
    return {
      rows: this.placeholderRows.subarray(0, count),
      sampleIndices: this.placeholderSources.subarray(0, count),
    };
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

  private emitSequence(kv: KvCacheManager, seq: Sequence, numNew: number): void {
    const { buffers } = this;
    const b = this.seqs.length;
    const start = seq.numComputed;
    const end = start + numNew;
    const row = buffers.appendSequence(seq.tokens, kv.slotsOf(seq.seqId), start, end);
    // Past the known tokens lies the one the step in flight samples: this sequence's last row.
    if (end > seq.numTokens) this.addPlaceholder(row, seq);
    seq.numComputed = end;
    seq.numInFlight += numNew;
    this.seqs.push(seq);
    this.seqIds.push(seq.seqId);
    this.numNew[b] = numNew;
    if (end < seq.numTokens + seq.numPlaceholders) {
      this.sampleBase[b] = -1;
      this.numSamples[b] = 0;
      return;
    }
    // A prompt sequence of an n > 1 request samples its last row once per child (each with its own seed).
    const targets = seq.sampleTargets;
    this.sampleBase[b] = this.sampleTargets.length;
    this.numSamples[b] = targets.length;
    seq.sampleIndex = this.sampleTargets.length;
    // Records are prepared before this step's own placeholder is counted: they span the outputs before it.
    for (const target of targets) {
      buffers.addSample(row, target.prepareRow(this.parity));
      this.sampleTargets.push(target);
    }
    seq.numPlaceholders++;
  }

  private addPlaceholder(row: number, seq: Sequence): void {
    const k = this.numPlaceholderRows++;
    this.placeholderRows[k] = row;
    this.placeholderSources[k] = seq.sampleIndex;
    this.buffers.setToken(row, PLACEHOLDER_TOKEN);
  }
}
