import { describe, expect, it } from 'vitest';
import { quantile, summarize } from '../src/bench/latency-summary.js';

describe('latency summary', () => {
  // Reference values: numpy.percentile (linear interpolation) and numpy.std (population), worked by hand.
  it('interpolates percentiles between ranks as numpy does', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(hundred, 0.99)).toBeCloseTo(99.01, 10);
    expect(quantile([7], 0.99)).toBe(7);
  });

  it('summarizes mean, median, p90, p99 and std', () => {
    const s = summarize([2, 4, 4, 4, 5, 5, 7, 9]);
    expect(s.mean).toBe(5);
    expect(s.median).toBe(4.5);
    expect(s.std).toBe(2);
    // Rank 0.9 * 7 = 6.3: 7 + 0.3 * (9 - 7).
    expect(s.p90).toBeCloseTo(7.6, 10);
    expect(s.p99).toBeCloseTo(8.86, 10);
    expect(summarize([])).toEqual({ mean: 0, median: 0, p90: 0, p99: 0, std: 0 });
  });
});
