import type { LatencySummary } from './latency-summary.js';
import type { ServeBenchmarkResult, ServeBenchmarkSummary } from './serve-benchmark.js';

const WIDTH = 52;

function row(label: string, value: string | number): string {
  const text =
    typeof value === 'number' ? (Number.isInteger(value) ? String(value) : value.toFixed(2)) : value;
  return `${label.padEnd(WIDTH - 12)}${text.padStart(12)}`;
}

function section(title: string): string {
  const side = Math.max(0, WIDTH - title.length - 2);
  return `${'-'.repeat(Math.floor(side / 2))} ${title} ${'-'.repeat(Math.ceil(side / 2))}`;
}

function latencyRows(name: string, s: LatencySummary): string[] {
  return [
    row(`Mean ${name} (ms):`, s.mean),
    row(`Median ${name} (ms):`, s.median),
    row(`P99 ${name} (ms):`, s.p99),
  ];
}

/** The human-readable table `ferrum bench serve` prints. */
export function formatBenchReport(s: ServeBenchmarkSummary): string {
  return [
    section('Ferrum serving benchmark'),
    row('Successful requests:', s.completed),
    row('Failed requests:', s.failed),
    row('Most requests in flight:', s.maxConcurrencyObserved),
    row('Benchmark duration (s):', s.durationS),
    row('Total input tokens:', s.totalInputTokens),
    row('Total generated tokens:', s.totalOutputTokens),
    row('Request throughput (req/s):', s.requestThroughput),
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
    '='.repeat(WIDTH),
  ].join('\n');
}

/** The JSON written to `--result-file`: the configuration, flat summary keys (vLLM's names) and per-request data. */
export function benchResultJson(config: Readonly<Record<string, unknown>>, result: ServeBenchmarkResult) {
  const s = result.summary;
  const latency = (name: string, l: LatencySummary) => ({
    [`mean_${name}_ms`]: l.mean,
    [`median_${name}_ms`]: l.median,
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
