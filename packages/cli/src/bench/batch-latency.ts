import { REPORT_WIDTH, row, section } from './bench-report.js';
import { quantile } from './latency-summary.js';

/** The percentiles `vllm bench latency` reports. */
const PERCENTILES = [10, 25, 50, 75, 90, 99] as const;

/** Latency of a whole batch over the measured iterations, in seconds. */
export interface BatchLatencySummary {
  readonly avg: number;
  /** Percentile (10, 25, 50, 75, 90, 99) → seconds, numpy's linear interpolation. */
  readonly percentiles: Readonly<Record<number, number>>;
  /** Each iteration's latency, in run order. */
  readonly latencies: readonly number[];
}

/** Average and percentiles of per-iteration latencies (seconds). */
export function summarizeBatchLatency(latencies: readonly number[]): BatchLatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const avg = latencies.reduce((sum, v) => sum + v, 0) / Math.max(1, latencies.length);
  const percentiles = Object.fromEntries(PERCENTILES.map((p) => [p, quantile(sorted, p / 100)]));
  return { avg, percentiles, latencies };
}

/** The table `ferrum bench latency` prints. */
export function formatLatencyReport(
  s: BatchLatencySummary,
  shape: { readonly batchSize: number; readonly inputLen: number; readonly outputLen: number },
): string {
  return [
    section('Ferrum batch latency'),
    row('Batch size:', shape.batchSize),
    row('Input / output tokens per request:', `${shape.inputLen} / ${shape.outputLen}`),
    row('Iterations:', s.latencies.length),
    row('Avg latency (s):', s.avg.toFixed(4)),
    ...PERCENTILES.map((p) => row(`P${p} latency (s):`, s.percentiles[p].toFixed(4))),
    '='.repeat(REPORT_WIDTH),
  ].join('\n');
}

/** The JSON written to `--result-file`, with vLLM's keys (`avg_latency`, `latencies`, `percentiles`). */
export function latencyResultJson(config: Readonly<Record<string, unknown>>, s: BatchLatencySummary) {
  return {
    date: new Date().toISOString(),
    ...config,
    avg_latency: s.avg,
    latencies: s.latencies,
    percentiles: Object.fromEntries(PERCENTILES.map((p) => [String(p), s.percentiles[p]])),
  };
}
