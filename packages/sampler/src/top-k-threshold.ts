import { LogitHistogram } from './logit-histogram.js';

/**
 * The k-th largest finite logit of a row, found with a count histogram (two O(vocab) passes without exp)
 * and a sort of the one bucket that holds it. Scratch is reused across calls.
 */
export class TopKThreshold {
  private readonly histogram: LogitHistogram;
  private readonly before = new Float64Array(1);
  private values = new Float32Array(0);

  constructor(numBuckets?: number) {
    this.histogram = new LogitHistogram(numBuckets);
  }

  /**
   * @param k in `[1, number of finite entries]`.
   * @param max the largest finite entry of `row`; `min` the smallest.
   * @returns the k-th largest finite entry; keeping every entry `>=` it keeps the top k plus any ties.
   */
  compute(row: Float32Array, k: number, max: number, min: number): number {
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
