import { DEFAULT_SAMPLING_PARAMS, type ForwardBatch, type RowSampling } from '@ferrum/types';

/** One sequence's part of a hand-built step: its new tokens and its whole KV list. */
export interface SeqStep {
  readonly tokens: readonly number[];
  /** Cached prefix slots, then the new tokens' slots. */
  readonly kvSlots: readonly number[];
  /** Which rows are sampled: every row, the last one, or none (a mid-prompt chunk). */
  readonly sample: 'all' | 'last' | 'none';
}

/**
 * A flattened ForwardBatch for `steps`; positions follow each KV list (prefix length + i). With
 * `sampling`, sampled row r gets `sampling(r)`; without it the runtime returns logits of every sampled row.
 */
export function buildBatch(steps: readonly SeqStep[], sampling?: (row: number) => RowSampling): ForwardBatch {
  const tokenIds: number[] = [];
  const positions: number[] = [];
  const slotMapping: number[] = [];
  const sampleRows: number[] = [];
  const kvIndices: number[] = [];
  const qIndptr = [0];
  const kvIndptr = [0];
  for (const step of steps) {
    const prefix = step.kvSlots.length - step.tokens.length;
    step.tokens.forEach((token, i) => {
      if (step.sample === 'all' || (step.sample === 'last' && i === step.tokens.length - 1)) {
        sampleRows.push(tokenIds.length);
      }
      tokenIds.push(token);
      positions.push(prefix + i);
      slotMapping.push(step.kvSlots[prefix + i]);
    });
    kvIndices.push(...step.kvSlots);
    qIndptr.push(tokenIds.length);
    kvIndptr.push(kvIndices.length);
  }
  return {
    tokenIds: Int32Array.from(tokenIds),
    positions: Int32Array.from(positions),
    qIndptr: Int32Array.from(qIndptr),
    kvIndptr: Int32Array.from(kvIndptr),
    kvIndices: Int32Array.from(kvIndices),
    slotMapping: Int32Array.from(slotMapping),
    sampleRows: Int32Array.from(sampleRows),
    sampling: sampling ? sampleRows.map((_, i) => sampling(i)) : undefined,
    numSeqs: steps.length,
    numTokens: tokenIds.length,
  };
}

/** A greedy sampling row (temperature 0) asking for the chosen token's logprob. */
export function greedyRow(): RowSampling {
  return {
    requestId: 'test',
    params: { ...DEFAULT_SAMPLING_PARAMS, temperature: 0, logprobs: 0 },
    seed: 0,
    outputTokenIds: new Int32Array(0),
    promptTokenIds: new Int32Array(0),
    needsHostLogits: false,
  };
}

/** Consecutive integers [start, start + count). */
export function range(start: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + i);
}

/** Largest |a[i] - b[i]|; infinite when the lengths differ. */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

/** max - min over all values. */
export function valueRange(values: Float32Array): number {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const value of values) {
    min = Math.min(min, value);
    max = Math.max(max, value);
  }
  return max - min;
}
