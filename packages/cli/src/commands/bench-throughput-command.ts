import { benchResultJson, failedRequestsError, formatBenchReport } from '../bench/bench-report.js';
import { offerLoad } from '../bench/offer-load.js';
import { randomPrompts } from '../bench/prompt-dataset.js';
import type { CliContext } from '../cli-context.js';
import { numberOption } from '../parse-options.js';
import {
  OFFLINE_BENCH_HELP,
  parseOfflineBench,
  withOfflineEngine,
  writeResultFile,
} from './offline-bench.js';

export const BENCH_THROUGHPUT_USAGE = `Usage: ferrum bench throughput [options]

Offline throughput: load the engine in this process, submit every request at once (or
--max-concurrency at a time) and report request and token throughput, TTFT, TPOT, ITL and end-to-end
latency (mean, median, p90, p99), as \`vllm bench throughput\` (plus its per-request latencies).

  --num-prompts N        requests (default 1000)
  --input-len I          random prompt token ids per request (default 1024)
  --output-len O         tokens generated per request (default 128)
  --prefix-len P         a random prefix of P token ids shared by every prompt, before its own I
                         (prefix-cache hits; default 0)
  --max-concurrency C    most requests in flight (default: all at once)
${OFFLINE_BENCH_HELP}`;

/**
 * `ferrum bench throughput`. Bad flags are `invalid_argument` (exit 2), checked before the engine loads;
 * failed requests are a runtime failure (exit 1) reported after the report.
 */
export async function benchThroughputCommand(args: readonly string[], context: CliContext): Promise<number> {
  const bench = parseOfflineBench(
    'bench throughput',
    args,
    {
      'num-prompts': { type: 'string' },
      'prefix-len': { type: 'string' },
      'max-concurrency': { type: 'string' },
    },
    { inputLen: 1024, outputLen: 128 },
  );
  const { parsed, workload } = bench;
  const { prefixLen, inputLen, outputLen, seed } = workload;
  const numPrompts = numberOption(parsed, 'num-prompts', { min: 1, integer: true }) ?? 1000;
  const maxConcurrency =
    numberOption(parsed, 'max-concurrency', { min: 1, integer: true }) ?? Number.POSITIVE_INFINITY;
  const shared = prefixLen > 0 ? ` (${prefixLen} shared)` : '';
  const what = `${numPrompts} requests, ${prefixLen + inputLen} in${shared} / ${outputLen} out`;
  return withOfflineEngine(bench, context, what, async (engine, send) => {
    const prompts = randomPrompts(numPrompts, inputLen, engine.modelInfo.config.vocabSize, seed, prefixLen);
    const load = { maxConcurrency, requestRate: Number.POSITIVE_INFINITY, seed };
    const result = await offerLoad(send, prompts, load);
    if (context.signal.aborted) return;
    context.stdout.write(`${formatBenchReport(result.summary, 'Ferrum offline throughput')}\n`);
    const settings = {
      num_prompts: numPrompts,
      prefix_len: prefixLen,
      max_concurrency: Number.isFinite(maxConcurrency) ? maxConcurrency : null,
    };
    await writeResultFile(bench, engine, settings, (config) => benchResultJson(config, result));
    if (result.summary.failed > 0) throw failedRequestsError('bench throughput', result);
  });
}
