import { FerrumError } from '@ferrum/types';
import type { LatencySummary } from './latency-summary.js';
import type { BenchmarkResult, BenchmarkSummary } from './offer-load.js';

/** Characters per line of a report table. */
export const REPORT_WIDTH = 52;

/** One `label   value` line of a report table (numbers with two decimals unless integers). */
export function row(label: string, value: string | number): string {
  const text =
    typeof value === 'number' ? (Number.isInteger(value) ? String(value) : value.toFixed(2)) : value;
  return `${label.padEnd(REPORT_WIDTH - 12)}${text.padStart(12)}`;
}

/** A centred `---- title ----` line of a report table. */
export function section(title: string): string {
  const side = Math.max(0, REPORT_WIDTH - title.length - 2);
  return `${'-'.repeat(Math.floor(side / 2))} ${title} ${'-'.repeat(Math.ceil(side / 2))}`;
}

function latencyRows(name: string, s: LatencySummary): string[] {
  return [
    row(`Mean ${name} (ms):`, s.mean),
    row(`Median ${name} (ms):`, s.median),
    row(`P90 ${name} (ms):`, s.p90),
    row(`P99 ${name} (ms):`, s.p99),
  ];
}

/** The human-readable table `ferrum bench serve` (and, titled otherwise, `bench throughput`) prints. */
export function formatBenchReport(s: BenchmarkSummary, title = 'Ferrum serving benchmark'): string {
  return [
    section(title),
    row('Successful requests:', s.completed),
    row('Failed requests:', s.failed),
    row('Most requests in flight:', s.maxConcurrencyObserved),
    row('Benchmark duration (s):', s.durationS),
    row('Total input tokens:', s.totalInputTokens),
    row('Total generated tokens:', s.totalOutputTokens),
    row('Request throughput (req/s):', s.requestThroughput),
    row('Input token throughput (tok/s):', s.inputThroughput),
    row('Output token throughput (tok/s):', s.outputThroughput),
    row('Total token throughput (tok/s):', s.totalTokenThroughput),
    section('Time to first token'),
    ...latencyRows('TTFT', s.ttftMs),
    section('Time per output token (excl. 1st)'),
    ...latencyRows('TPOT', s.tpotMs),
    section('Inter-token latency'),
    ...latencyRows('ITL', s.itlMs),
    section('End-to-end latency'),
    ...latencyRows('E2EL', s.e2elMs),
    '='.repeat(REPORT_WIDTH),
  ].join('\n');
}

/** The JSON written to `--result-file`: the configuration, flat summary keys (vLLM's names) and per-request data. */
export function benchResultJson(config: Readonly<Record<string, unknown>>, result: BenchmarkResult) {
  const s = result.summary;
  const latency = (name: string, l: LatencySummary) => ({
    [`mean_${name}_ms`]: l.mean,
    [`median_${name}_ms`]: l.median,
    [`p90_${name}_ms`]: l.p90,
    [`p99_${name}_ms`]: l.p99,
    [`std_${name}_ms`]: l.std,
  });
  return {
    date: new Date().toISOString(),
    ...config,
    duration: s.durationS,
    completed: s.completed,
    failed: s.failed,
    max_concurrency_observed: s.maxConcurrencyObserved,
    total_input_tokens: s.totalInputTokens,
    total_output_tokens: s.totalOutputTokens,
    request_throughput: s.requestThroughput,
    input_throughput: s.inputThroughput,
    output_throughput: s.outputThroughput,
    total_token_throughput: s.totalTokenThroughput,
    ...latency('ttft', s.ttftMs),
    ...latency('tpot', s.tpotMs),
    ...latency('itl', s.itlMs),
    ...latency('e2el', s.e2elMs),
    input_lens: result.requests.map((r) => r.promptTokens),
    output_lens: result.requests.map((r) => r.outputTokens),
    ttfts: result.requests.map((r) => r.ttftMs),
    itls: result.requests.map((r) => r.itlMs),
    e2els: result.requests.map((r) => r.e2elMs),
    errors: result.requests.map((r) => r.error ?? ''),
  };
}

/**
 * The runtime failure (exit 1) of a run in which some requests failed, naming the first error; thrown
 * after the report so that a partly failed run still tells what it measured.
 */
export function failedRequestsError(command: string, result: BenchmarkResult): FerrumError {
  const firstError = result.requests.find((r) => !r.ok)?.error ?? 'unknown';
  return new FerrumError(
    'internal',
    `${command}: ${result.summary.failed} of ${result.requests.length} requests failed; first error: ${firstError.replace(/\s+/g, ' ')}`,
  );
}
