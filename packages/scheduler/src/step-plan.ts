import type { KvCacheManager, KvSwapPlan } from '@ferrum/interfaces';
import type { BatchBuffers } from './batch-buffers.js';
import type { ResolvedSchedulerOptions } from './scheduler-options.js';
import type { Sequence } from './sequence.js';

/**
 * What one step decided, kept until `complete()` applies it. Decisions are collected first (decodes and
 * prefill chunks in priority order) and written into the batch afterwards, decodes first, because a
 * sequence's slot list is only stable once every allocation and preemption of the step is done.
 * All arrays are reused from step to step.
 */
export class StepPlan {
  stepNo = 0;
  /** Budgets left while planning. */
  numTokensLeft = 0;
  numKvTokensLeft = 0;
  /** Seats of maxNumSeqs taken by running sequences (a prompt sequence counts its future forks). */
  numSeats = 0;
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

  constructor(options: ResolvedSchedulerOptions) {
    this.prefillLengths = new Int32Array(options.maxNumSeqs);
    this.numNew = new Int32Array(options.maxNumSeqs);
    this.sampleBase = new Int32Array(options.maxNumSeqs);
    this.numSamples = new Int32Array(options.maxNumSeqs);
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
  }

  /** Whether `numTokens` new tokens of `seq` fit the token and kvIndices budgets. */
  fits(seq: Sequence, numTokens: number): boolean {
    return numTokens <= this.numTokensLeft && seq.numComputed + numTokens <= this.numKvTokensLeft;
  }

  /** Largest chunk of `seq`'s remaining tokens the budgets allow (may be 0). */
  chunkFor(seq: Sequence): number {
    const remaining = seq.numTokens - seq.numComputed;
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

  /** Write the planned sequences into `buffers`: decodes first, then prefill chunks. */
  emit(buffers: BatchBuffers, kv: KvCacheManager): void {
    buffers.reset();
    for (const seq of this.decodes) this.emitSequence(buffers, kv, seq, 1);
    for (let i = 0; i < this.prefills.length; i++) {
      this.emitSequence(buffers, kv, this.prefills[i], this.prefillLengths[i]);
    }
  }

  private take(seq: Sequence, numTokens: number): void {
    seq.stepMark = this.stepNo;
    this.numTokensLeft -= numTokens;
    this.numKvTokensLeft -= seq.numComputed + numTokens;
  }

  private emitSequence(buffers: BatchBuffers, kv: KvCacheManager, seq: Sequence, numNew: number): void {
    const b = this.seqs.length;
    const end = seq.numComputed + numNew;
    const row = buffers.appendSequence(seq.tokens, kv.slotsOf(seq.seqId), seq.numComputed, end);
    this.seqs.push(seq);
    this.seqIds.push(seq.seqId);
    this.numNew[b] = numNew;
    if (end < seq.numTokens) {
      this.sampleBase[b] = -1;
      this.numSamples[b] = 0;
      return;
    }
    // A prompt sequence of an n > 1 request samples its last row once per child (each with its own seed).
    const targets = seq.sampleTargets;
    this.sampleBase[b] = this.sampleTargets.length;
    this.numSamples[b] = targets.length;
    for (const target of targets) {
      buffers.addSample(row, target.prepareRow());
      this.sampleTargets.push(target);
    }
  }
}
