import type { SequenceUpdate } from '@ferrum/interfaces';
import type { FinishReason } from '@ferrum/types';
import type { Sequence } from './sequence.js';
import type { SequenceRegistry } from './sequence-registry.js';
import type { StepPlan } from './step-plan.js';

type MutableSequenceUpdate = { -readonly [K in keyof SequenceUpdate]: SequenceUpdate[K] };

/**
 * Applies a computed step: advances each planned sequence, commits its completed tokens to the prefix
 * cache (see {@link SequenceRegistry.commitsEachStep}), appends sampled tokens (forking `n > 1` prompt
 * sequences into their children first) and ends sequences that hit a stop id or a length limit.
 * Sequences that ended while the step ran are skipped (their rows are discarded); ones preempted while it
 * ran still take their sampled token.
 *
 * The updates it returns are rewritten by the next run: it runs every step, and allocating nothing there
 * keeps V8's scavenges off the step loop.
 */
export class StepCompleter {
  /** The array `run` returns, holding the first `updates.length` of `records`. */
  private readonly updates: SequenceUpdate[] = [];
  /** One record per update a run has returned so far, kept for reuse. */
  private readonly records: MutableSequenceUpdate[] = [];
  private numUpdates = 0;

  constructor(private readonly registry: SequenceRegistry) {}

  run(plan: StepPlan, tokenIds: Int32Array): readonly SequenceUpdate[] {
    this.numUpdates = 0;
    for (let b = 0; b < plan.seqs.length; b++) {
      const seq = plan.seqs[b];
      if (!seq.isLive) continue;
      const onDevice = seq.place === 'running';
      // Recompute preemption dropped the step's KV (and reset the count); a swap-out carried it.
      if (onDevice || seq.swapped) seq.numInFlight -= plan.numNew[b];
      // A prompt sequence commits before it forks, so its children share the prompt through the cache.
      if (onDevice && (this.registry.commitsEachStep || seq.children !== null)) {
        this.registry.kv.commit(seq.seqId, seq.tokens, seq.numCompleted);
      }
      const base = plan.sampleBase[b];
      if (base < 0) {
        const targets = seq.sampleTargets;
        for (let i = 0; i < targets.length; i++) this.add(targets[i], -1, -1, undefined);
      } else if (seq.children !== null) {
        this.fork(plan, seq, base, plan.numSamples[b], tokenIds);
      } else {
        seq.numPlaceholders--;
        this.append(seq, tokenIds[base], base);
      }
    }
    const { updates, records } = this;
    for (let i = 0; i < this.numUpdates; i++) updates[i] = records[i];
    updates.length = this.numUpdates;
    return updates;
  }

  /** Give each still-live child the parent's KV and its own sampled token, then drop the parent. */
  private fork(plan: StepPlan, parent: Sequence, base: number, count: number, tokenIds: Int32Array): void {
    const { kv, running } = this.registry;
    for (let i = base; i < base + count; i++) {
      const child = plan.sampleTargets[i];
      if (!child.isLive) continue;
      kv.fork(parent.seqId, child.seqId);
      child.parent = null;
      child.numComputed = parent.numComputed;
      child.place = 'running';
      running.insert(child);
      this.append(child, tokenIds[i], i);
    }
    this.registry.dropForkedParent(parent);
  }

  private append(seq: Sequence, tokenId: number, sampleIndex: number): void {
    seq.tokens[seq.numTokens++] = tokenId;
    if (seq.place === 'running') seq.state = 'decoding';
    const finishReason = this.finishReasonOf(seq, tokenId);
    if (finishReason !== undefined) this.registry.release(seq, 'finished');
    this.add(seq, tokenId, sampleIndex, finishReason);
  }

  /** Write the next update (`tokenId` -1: a prefill chunk that samples nothing). */
  private add(
    seq: Sequence,
    tokenId: number,
    sampleIndex: number,
    finishReason: FinishReason | undefined,
  ): void {
    const { group } = seq;
    let record = this.records[this.numUpdates];
    if (record === undefined) {
      record = {
        requestId: '',
        seqId: '',
        index: 0,
        tokenId: 0,
        sampleIndex: 0,
        numCachedPromptTokens: 0,
        finishReason: undefined,
      };
      this.records.push(record);
    }
    this.numUpdates++;
    record.requestId = group.request.requestId;
    record.seqId = seq.seqId;
    record.index = seq.index;
    record.tokenId = tokenId;
    record.sampleIndex = sampleIndex;
    record.numCachedPromptTokens = Math.max(0, group.numCachedPromptTokens);
    record.finishReason = finishReason;
  }

  /**
   * `stop` for a stop id once `minTokens` are out (checked first: the model did end the text), `length` at
   * `maxTokens` outputs or `maxModelLen` tokens in all.
   */
  private finishReasonOf(seq: Sequence, tokenId: number): FinishReason | undefined {
    const { sampling } = seq.group.request;
    const numOutput = seq.numTokens - seq.numPromptTokens;
    if (numOutput >= sampling.minTokens && seq.group.stopTokenIds.includes(tokenId)) return 'stop';
    if (numOutput >= sampling.maxTokens || seq.numTokens >= this.registry.options.maxModelLen)
      return 'length';
    return undefined;
  }
}
