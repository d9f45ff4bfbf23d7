import type { Histogram } from './engine-options.js';

/** Bucket bounds (seconds) shared with vLLM's latency histograms, so dashboards carry over. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80,
];

/** A fixed-bucket histogram that records without allocating. */
export class HistogramRecorder {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(private readonly buckets: readonly number[] = LATENCY_BUCKETS_SECONDS) {
    this.counts = new Float64Array(buckets.length + 1);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.buckets.length && value > this.buckets[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }

  snapshot(): Histogram {
    const cumulative: number[] = [];
    let running = 0;
    for (const c of this.counts) {
      running += c;
      cumulative.push(running);
    }
    return { buckets: this.buckets, counts: cumulative, sum: this.sum, count: this.count };
  }
}
