/** Mean, median, 90th and 99th percentiles and standard deviation of a sample (milliseconds in reports). */
export interface LatencySummary {
  readonly mean: number;
  readonly median: number;
  readonly p90: number;
  readonly p99: number;
  readonly std: number;
}

/** The q-quantile (0..1) of sorted values with linear interpolation between ranks (numpy's default). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const rank = (sorted.length - 1) * q;
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

/** Summary of `values`; all zeros for an empty sample (no request produced that measure). */
export function summarize(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { mean: 0, median: 0, p90: 0, p99: 0, std: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / values.length;
  return {
    mean,
    median: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    std: Math.sqrt(variance),
  };
}
