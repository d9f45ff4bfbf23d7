import type { SamplingParams } from '@ferrum/types';
import { LogitHistogram } from './logit-histogram.js';
import { maskedRowError, positiveInfinityError } from './row-errors.js';
import { argmax, maxOf } from './row-reductions.js';
import { TopKThreshold } from './top-k-threshold.js';

/** `Math.exp(x)` is exactly 0 for every x below this. */
const EXP_UNDERFLOW = -746;
/** Span, in temperature-scaled logit units below the max, of the top-p mass histogram. */
const MASS_RANGE = 50;

/** Options of a {@link TruncatedDistribution}. */
export interface TruncatedDistributionOptions {
  /** Buckets of the histograms that find the top-k and top-p thresholds (default 4096). */
  readonly numBuckets?: number;
  /** Largest top-k found with a heap rather than a histogram (default 1024). */
  readonly maxHeapTopK?: number;
}

/**
 * The distribution one row is sampled from after temperature and truncation, held as the kept token ids
 * (ascending) and their unnormalized weights `w = exp((l - max) / T)`, with `l` the row's processed logit.
 *
 * Truncation follows vLLM v1: temperature, then min-p, then top-k, then top-p over the mass that min-p
 * and top-k left (renormalized). Every rule keeps an upper set of the row, ties included:
 * - tokens whose weight underflows to 0 (probability 0 in double precision) are dropped;
 * - min-p keeps `w >= minP` (`p >= minP × p_max`);
 * - top-k keeps `l >= ` the k-th largest logit, except that top-k 1 keeps only the first maximum
 *   (lowest id on ties): top-k 1 is greedy, and picks what temperature 0 and the runtimes' argmax pick;
 * - top-p keeps a token iff the mass of tokens with a strictly larger logit is `< topP × mass`.
 *
 * Scratch (ids, weights, histograms) is sized to the vocabulary once and reused; nothing is sorted except
 * the one histogram bucket that holds each threshold.
 */
export class TruncatedDistribution {
  // The four fields below are the result of the last build(); callers read them, never write them.
  /** Kept token ids, ascending; valid for `[0, count)`. */
  ids = new Int32Array(0);
  /** Weights of the kept ids, same order. */
  weights = new Float64Array(0);
  /** Number of kept ids. */
  count = 0;
  /** Sum of the kept weights, in id order. */
  total = 0;
  private max = 0;
  private temperature = 1;
  private readonly topK: TopKThreshold;
  private readonly massHistogram: LogitHistogram;
  private readonly before = new Float64Array(1);
  private order = new Int32Array(0);
  /** Mass bucket of each kept id (top-p only). */
  private buckets = new Int32Array(0);

  constructor(options: TruncatedDistributionOptions = {}) {
    this.topK = new TopKThreshold(options.numBuckets, options.maxHeapTopK);
    this.massHistogram = new LogitHistogram(options.numBuckets);
  }

  /**
   * Build the kept set of `row` (processed logits, not yet divided by the temperature) for
   * `params.temperature > 0`, `topK`, `topP` and `minP`. Does not modify `row`.
   * @throws FerrumError `invalid_argument` when every entry of the row is -Infinity, or one is +Infinity.
   */
  build(row: Float32Array, params: SamplingParams): void {
    this.ensureCapacity(row.length);
    if (params.topK === 1) {
      this.keepFirstMax(row, params.temperature);
      return;
    }
    const max = maxOf(row);
    if (max === Number.NEGATIVE_INFINITY) throw maskedRowError();
    if (max === Number.POSITIVE_INFINITY) throw positiveInfinityError();
    const { temperature } = params;
    this.max = max;
    this.temperature = temperature;
    // -Infinity floors keep every entry; -Infinity logits themselves fall out in collect (zero weight).
    const floor = params.topK > 0 ? this.topK.compute(row, params.topK) : Number.NEGATIVE_INFINITY;
    const withMass = params.topP < 1;
    if (withMass) {
      // Bucket only the logits that can matter: at most 50 temperature-scaled units below the max (lower
      // weights are < 2e-22 and can never hold the nucleus boundary), above the top-k floor and above what
      // min-p keeps (w >= minP ⇔ l >= max + T·ln(minP)). Lower logits share the last bucket.
      const minPFloor =
        params.minP > 0 ? max + temperature * Math.log(params.minP) : Number.NEGATIVE_INFINITY;
      this.massHistogram.reset(max, Math.max(floor, minPFloor, max - MASS_RANGE * temperature));
    }
    this.collect(row, floor, params.minP, withMass);
    if (withMass) this.applyTopP(row, params.topP);
  }

  /** Log-probability of a kept id with processed logit `logit` under the truncated distribution. */
  logprobOf(logit: number): number {
    return (logit - this.max) / this.temperature - Math.log(this.total);
  }

  /**
   * Inverse-CDF draw: the first kept id (ascending) at which the running sum of weights exceeds `u × total`.
   * @param u uniform in [0, 1).
   */
  draw(u: number): number {
    const target = u * this.total;
    let cumulative = 0;
    for (let j = 0; j < this.count; j++) {
      cumulative += this.weights[j];
      if (cumulative > target) return this.ids[j];
    }
    // Only reachable when u × total rounds up to total (kept weights are all positive): the last kept id.
    return this.ids[this.count - 1];
  }

  /**
   * Keep ids with `logit >= floor` (top-k) and `w >= minP`; fills ids, weights, count and total, and with
   * `withMass` each kept id's mass bucket and the bucket totals.
   */
  private collect(row: Float32Array, floor: number, minP: number, withMass: boolean): void {
    const { ids, weights, buckets, max, temperature, massHistogram: histogram } = this;
    // Below this bound exp(s) is surely < minP, or 0 in double precision: skip the exp. Tokens whose
    // weight is 0 have probability 0 and are not kept.
    const skipBelow = minP > 0 ? Math.log(minP) - 1e-9 : EXP_UNDERFLOW;
    let count = 0;
    let total = 0;
    for (let i = 0; i < row.length; i++) {
      const value = row[i];
      if (!(value >= floor)) continue;
      const scaled = (value - max) / temperature;
      if (scaled < skipBelow) continue;
      const weight = Math.exp(scaled);
      if (weight === 0 || weight < minP) continue;
      ids[count] = i;
      weights[count] = weight;
      if (withMass) {
        const bucket = histogram.bucketOf(value);
        buckets[count] = bucket;
        histogram.totals[bucket] += weight;
      }
      count++;
      total += weight;
    }
    this.count = count;
    this.total = total;
  }

  /** Nucleus: keep the smallest upper set (ties included) holding at least `topP` of the kept mass. */
  private applyTopP(row: Float32Array, topP: number): void {
    const { ids, weights, buckets } = this;
    const target = topP * this.total;
    const bucket = this.massHistogram.findBucket(target, this.before);
    // Members of the boundary bucket, largest logit first.
    let numMembers = 0;
    for (let j = 0; j < this.count; j++) if (buckets[j] === bucket) this.order[numMembers++] = j;
    const members = this.order.subarray(0, numMembers).sort((a, b) => row[ids[b]] - row[ids[a]]);
    // Walk groups of equal logit; `above` is the mass of strictly larger logits.
    let above = this.before[0];
    let threshold = Number.POSITIVE_INFINITY;
    for (let q = 0; q < numMembers && above < target; ) {
      threshold = row[ids[members[q]]];
      while (q < numMembers && row[ids[members[q]]] === threshold) above += weights[members[q++]];
    }
    this.keepAtLeast(row, threshold);
  }

  /**
   * Top-k 1 is greedy: keep only the first maximum (the lowest id among tied maxima), the token the
   * runtimes' argmax picks, rather than every tied maximum. Min-p and top-p always keep the maximum.
   */
  private keepFirstMax(row: Float32Array, temperature: number): void {
    const id = argmax(row);
    if (id < 0) throw maskedRowError();
    if (row[id] === Number.POSITIVE_INFINITY) throw positiveInfinityError();
    this.max = row[id];
    this.temperature = temperature;
    this.ids[0] = id;
    this.weights[0] = 1;
    this.count = 1;
    this.total = 1;
  }

  /** Drop kept ids whose logit is below `threshold`; recompute the total in id order. */
  private keepAtLeast(row: Float32Array, threshold: number): void {
    const { ids, weights } = this;
    let count = 0;
    let total = 0;
    for (let j = 0; j < this.count; j++) {
      if (row[ids[j]] >= threshold) {
        ids[count] = ids[j];
        weights[count] = weights[j];
        total += weights[j];
        count++;
      }
    }
    this.count = count;
    this.total = total;
  }

  private ensureCapacity(vocabSize: number): void {
    if (this.ids.length >= vocabSize) return;
    this.ids = new Int32Array(vocabSize);
    this.weights = new Float64Array(vocabSize);
    this.order = new Int32Array(vocabSize);
    this.buckets = new Int32Array(vocabSize);
  }
}
