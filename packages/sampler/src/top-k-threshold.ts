import { LogitHistogram } from './logit-histogram.js';
import { TopNSelector } from './top-n-selector.js';

/**
 * The k-th largest finite logit of a row. Small k (the common top-k 20-100): one pass with a k-entry heap,
 * where almost every entry is rejected by one comparison with the heap's root. Large k: a count histogram
 * (two O(vocab) passes without exp) and a sort of the one bucket that holds the k-th value, where a heap
 * would pay O(log k) for too many entries. Scratch is reused across calls.
 */
export class TopKThreshold {
  private readonly histogram: LogitHistogram;
  private readonly selector = new TopNSelector();
  private readonly before = new Float64Array(1);
  private values = new Float32Array(0);

  /**
   * @param numBuckets buckets of the histogram path.
   * @param maxHeapK largest k served by the heap path.
   */
  constructor(
    numBuckets?: number,
    private readonly maxHeapK = 1024,
  ) {
    this.histogram = new LogitHistogram(numBuckets);
  }

  /**
   * @param k at least 1.
   * @returns the k-th largest finite entry of `row` (keeping every entry `>=` it keeps the top k plus any
   *   ties), or -Infinity when the row has no more than k finite entries (nothing to cut).
   */
  compute(row: Float32Array, k: number): number {
    if (k <= this.maxHeapK) {
      this.selector.select(row, k, null, row.length);
      return this.selector.count < k ? Number.NEGATIVE_INFINITY : this.selector.valueAt(k - 1);
    }
    let max = Number.NEGATIVE_INFINITY;
    let min = Number.POSITIVE_INFINITY;
    let numFinite = 0;
    for (let i = 0; i < row.length; i++) {
      const value = row[i];
      if (value > Number.NEGATIVE_INFINITY) {
        numFinite++;
        if (value > max) max = value;
        if (value < min) min = value;
      }
    }
    return numFinite <= k ? Number.NEGATIVE_INFINITY : this.fromHistogram(row, k, max, min);
  }

  /** The k-th largest finite entry, with `k` below the number of finite entries in `[min, max]`. */
  private fromHistogram(row: Float32Array, k: number, max: number, min: number): number {
    const { histogram } = this;
    histogram.reset(max, min);
    const counts = histogram.totals;
    for (let i = 0; i < row.length; i++) {
      const value = row[i];
      if (value > Number.NEGATIVE_INFINITY) counts[histogram.bucketOf(value)] += 1;
    }
    const bucket = histogram.findBucket(k, this.before);
    const rankInBucket = k - this.before[0];
    if (this.values.length < counts[bucket]) this.values = new Float32Array(row.length);
    let numMembers = 0;
    for (let i = 0; i < row.length; i++) {
      const value = row[i];
      if (value > Number.NEGATIVE_INFINITY && histogram.bucketOf(value) === bucket) {
        this.values[numMembers++] = value;
      }
    }
    const members = this.values.subarray(0, numMembers).sort();
    return members[numMembers - rankInBucket];
  }
}
