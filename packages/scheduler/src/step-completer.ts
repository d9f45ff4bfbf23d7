import type { SequenceUpdate } from '@ferrum/interfaces';
import type { FinishReason } from '@ferrum/types';
import type { Sequence } from './sequence.js';
import type { SequenceRegistry } from './sequence-registry.js';
import type { StepPlan } from './step-plan.js';

/**
 * Applies a computed step: advances each planned sequence, commits its completed tokens to the prefix
 * cache (see {@link SequenceRegistry.commitsEachStep}), appends sampled tokens (forking `n > 1` prompt
 * sequences into their children first) and ends sequences that hit a stop id or a length limit.
 * Sequences that ended while the step ran are skipped (their rows are discarded); ones preempted while it
 * ran still take their sampled token.
 */
export class StepCompleter {
  constructor(private readonly registry: SequenceRegistry) {}

  run(plan: StepPlan, tokenIds: Int32Array): SequenceUpdate[] {
    const updates: SequenceUpdate[] = [];
    for (let b = 0; b < plan.seqs.length; b++) {
      const seq = plan.seqs[b];
      if (!seq.isLive) continue;
      const onDevice = seq.place === 'running';
      // Recompute preemption dropped the step's KV (and reset the count); a swap-out carried it.
      if (onDevice || seq.swapped) seq.numInFlight -= plan.numNew[b];
      // A prompt sequence commits before it forks, so its children share the prompt through the cache.
      if (onDevice && (this.registry.commitsEachStep || seq.children !== null)) {
        this.registry.kv.commit(seq.seqId, seq.tokens.subarray(0, seq.numCompleted));
      }
      const base = plan.sampleBase[b];
      if (base < 0) {
        for (const target of seq.sampleTargets) updates.push(progressUpdate(target));
      } else if (seq.children !== null) {
        this.fork(plan, seq, base, plan.numSamples[b], tokenIds, updates);
      } else {
        seq.numPlaceholders--;
        this.append(seq, tokenIds[base], base, updates);
      }
    }
    return updates;
  }

  /** Give each still-live child the parent's KV and its own sampled token, then drop the parent. */
  private fork(
    plan: StepPlan,
    parent: Sequence,
    base: number,
    count: number,
    tokenIds: Int32Array,
    out: SequenceUpdate[],
  ): void {
    const { kv, running } = this.registry;
    for (let i = base; i < base + count; i++) {
      const child = plan.sampleTargets[i];
      if (!child.isLive) continue;
      kv.fork(parent.seqId, child.seqId);
      child.parent = null;
      child.numComputed = parent.numComputed;
      child.place = 'running';
      running.insert(child);
      this.append(child, tokenIds[i], i, out);
    }
    this.registry.dropForkedParent(parent);
  }

  private append(seq: Sequence, tokenId: number, sampleIndex: number, out: SequenceUpdate[]): void {
    seq.tokens[seq.numTokens++] = tokenId;
    if (seq.place === 'running') seq.state = 'decoding';
    const finishReason = this.finishReasonOf(seq, tokenId);
    const { group } = seq;
    const { requestId } = group.request;
    const update: SequenceUpdate = {
      requestId,
      seqId: seq.seqId,
      index: seq.index,
      tokenId,
      sampleIndex,
      numCachedPromptTokens: Math.max(0, group.numCachedPromptTokens),
    };
    if (finishReason === undefined) {
      out.push(update);
      return;
    }
    this.registry.release(seq, 'finished');
    out.push({ ...update, finishReason });
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

function progressUpdate(seq: Sequence): SequenceUpdate {
  return {
    requestId: seq.group.request.requestId,
    seqId: seq.seqId,
    index: seq.index,
    tokenId: -1,
    sampleIndex: -1,
    numCachedPromptTokens: Math.max(0, seq.group.numCachedPromptTokens),
  };
}
