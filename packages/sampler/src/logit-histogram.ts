/**
 * Equal-width buckets over a logit range `[bottom, top]`, bucket 0 holding `top`. Bucket indices never
 * increase as the logit grows, so "everything in buckets before b" is an upper set of the row: thresholds
 * (k-th largest, nucleus boundary) are found by walking bucket totals and sorting only the one boundary
 * bucket, instead of sorting the vocabulary.
 */
export class LogitHistogram {
  /** Per-bucket totals (counts or probability masses); zeroed by {@link LogitHistogram.reset}. */
  readonly totals: Float64Array;
  private top = 0;
  private scale = 0;

  constructor(readonly numBuckets = 4096) {
    this.totals = new Float64Array(numBuckets);
  }

  /** Spread the buckets over `[bottom, top]` (finite, bottom ≤ top) and zero the totals. */
  reset(top: number, bottom: number): void {
    this.top = top;
    this.scale = top > bottom ? this.numBuckets / (top - bottom) : 0;
    this.totals.fill(0);
  }

  /** Bucket of a logit in `[bottom, top]`; values below `bottom` land in the last bucket. */
  bucketOf(logit: number): number {
    const bucket = Math.floor((this.top - logit) * this.scale);
    return bucket < this.numBuckets ? bucket : this.numBuckets - 1;
  }

  /**
   * First bucket b where `Σ totals[0..b] ≥ target`; when rounding leaves the whole sum short of `target`,
   * the last non-empty bucket (so its members are still examined). Writes `Σ totals[0..b)` to `before[0]`.
   */
  findBucket(target: number, before: Float64Array): number {
    let cumulative = 0;
    let lastNonEmpty = 0;
    let beforeLastNonEmpty = 0;
    for (let bucket = 0; bucket < this.numBuckets; bucket++) {
      const total = this.totals[bucket];
      if (total === 0) continue;
      if (cumulative + total >= target) {
        before[0] = cumulative;
        return bucket;
      }
      lastNonEmpty = bucket;
      beforeLastNonEmpty = cumulative;
      cumulative += total;
    }
    before[0] = beforeLastNonEmpty;
    return lastNonEmpty;
  }
}
