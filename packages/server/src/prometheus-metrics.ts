import type { EngineMetrics, Histogram } from '@ferrum/engine';

/** Prefix of every metric; names otherwise mirror vLLM's `vllm:*` set. */
const PREFIX = 'ferrum:';

/** Escape a label value for the Prometheus text format. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labels(pairs: Readonly<Record<string, string>>): string {
  const body = Object.entries(pairs)
    .map(([key, value]) => `${key}="${escapeLabel(value)}"`)
    .join(',');
  return `{${body}}`;
}

/** Writes metric families in the Prometheus text exposition format (version 0.0.4). */
class Exposition {
  private readonly lines: string[] = [];

  constructor(private readonly base: Readonly<Record<string, string>>) {}

  family(name: string, type: 'gauge' | 'counter' | 'histogram', help: string): this {
    this.lines.push(`# HELP ${PREFIX}${name} ${help}`, `# TYPE ${PREFIX}${name} ${type}`);
    return this;
  }

  sample(name: string, value: number, extra: Readonly<Record<string, string>> = {}): this {
    this.lines.push(`${PREFIX}${name}${labels({ ...this.base, ...extra })} ${formatNumber(value)}`);
    return this;
  }

  /** A family of one unlabelled sample. */
  single(name: string, type: 'gauge' | 'counter', help: string, value: number): this {
    return this.family(name, type, help).sample(name, value);
  }

  histogram(name: string, help: string, h: Histogram): this {
    this.family(name, 'histogram', help);
    h.buckets.forEach((le, i) => {
      this.sample(`${name}_bucket`, h.counts[i], { le: formatNumber(le) });
    });
    this.sample(`${name}_bucket`, h.counts[h.counts.length - 1], { le: '+Inf' });
    return this.sample(`${name}_sum`, h.sum).sample(`${name}_count`, h.count);
  }

  toString(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/** Render an engine's metrics as Prometheus text, labelled with the served model's name (as vLLM does). */
export function renderPrometheusMetrics(metrics: EngineMetrics, modelName: string): string {
  const out = new Exposition({ model_name: modelName });
  out
    .single('num_requests_running', 'gauge', 'Requests in the running batch.', metrics.numRequestsRunning)
    .single('num_requests_waiting', 'gauge', 'Requests waiting to be scheduled.', metrics.numRequestsWaiting)
    .single(
      'num_requests_swapped',
      'gauge',
      'Requests swapped out to host memory.',
      metrics.numRequestsSwapped,
    )
    .single('kv_cache_usage_perc', 'gauge', 'Fraction of KV slots in use, 0 to 1.', metrics.kvCacheUsage)
    .single('prompt_tokens_total', 'counter', 'Prompt tokens processed.', metrics.promptTokensTotal)
    .single('generation_tokens_total', 'counter', 'Tokens generated.', metrics.generationTokensTotal)
    .single(
      'prefix_cache_queries_total',
      'counter',
      'Prompt tokens looked up in the prefix cache.',
      metrics.prefixCacheQueriesTotal,
    )
    .single(
      'prefix_cache_hits_total',
      'counter',
      'Prompt tokens found in the prefix cache.',
      metrics.prefixCacheHitsTotal,
    )
    .single(
      'num_preemptions_total',
      'counter',
      'Preemptions of running requests.',
      metrics.numPreemptionsTotal,
    )
    .family('request_success_total', 'counter', 'Finished requests by finish reason.');
  for (const [reason, count] of Object.entries(metrics.requestSuccessTotal)) {
    out.sample('request_success_total', count, { finished_reason: reason });
  }
  return out
    .histogram('time_to_first_token_seconds', 'Time to first token.', metrics.timeToFirstTokenSeconds)
    .histogram(
      'inter_token_latency_seconds',
      'Time between consecutive tokens.',
      metrics.interTokenLatencySeconds,
    )
    .histogram(
      'e2e_request_latency_seconds',
      'Request latency from arrival to finish.',
      metrics.e2eRequestLatencySeconds,
    )
    .histogram(
      'request_queue_time_seconds',
      'Time spent waiting before the first step.',
      metrics.requestQueueTimeSeconds,
    )
    .toString();
}
