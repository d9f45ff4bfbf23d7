import { formatLatencyReport, latencyResultJson, summarizeBatchLatency } from '../bench/batch-latency.js';
import { failedRequestsError } from '../bench/bench-report.js';
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

export const BENCH_LATENCY_USAGE = `Usage: ferrum bench latency [options]

Offline latency of one batch: load the engine in this process, run --batch-size requests together to
completion, --num-iters-warmup times unmeasured and --num-iters times measured, and report the batch's
latency (average and p10, p25, p50, p75, p90, p99 over iterations), as \`vllm bench latency\`. Each
iteration draws new random prompts, so the prefix cache does not shorten later ones.

  --batch-size B         requests per batch (default 8)
  --input-len I          random prompt token ids per request (default 32)
  --output-len O         tokens generated per request (default 128)
  --num-iters-warmup W   unmeasured iterations first (default 10)
  --num-iters N          measured iterations (default 30)
${OFFLINE_BENCH_HELP}`;

/**
 * `ferrum bench latency`. Bad flags are `invalid_argument` (exit 2), checked before the engine loads;
 * a failed request is a runtime failure (exit 1) that ends the run.
 */
export async function benchLatencyCommand(args: readonly string[], context: CliContext): Promise<number> {
  const flags = {
    'batch-size': { type: 'string' },
    'num-iters-warmup': { type: 'string' },
    'num-iters': { type: 'string' },
  } as const;
  const bench = parseOfflineBench('bench latency', args, flags, { inputLen: 32, outputLen: 128 });
  const { parsed, workload } = bench;
  const { inputLen, outputLen, seed } = workload;
  const batchSize = numberOption(parsed, 'batch-size', { min: 1, integer: true }) ?? 8;
  const numWarmup = numberOption(parsed, 'num-iters-warmup', { min: 0, integer: true }) ?? 10;
  const numIters = numberOption(parsed, 'num-iters', { min: 1, integer: true }) ?? 30;
  const what = `batch of ${batchSize}, ${inputLen} in / ${outputLen} out, ${numWarmup} warm-up + ${numIters} iterations`;
  return withOfflineEngine(bench, context, what, async (engine, send) => {
    const latencies: number[] = [];
    for (let iter = 0; iter < numWarmup + numIters && !context.signal.aborted; iter++) {
      const prompts = randomPrompts(batchSize, inputLen, engine.modelInfo.config.vocabSize, seed + iter);
      const load = { maxConcurrency: Number.POSITIVE_INFINITY, requestRate: Number.POSITIVE_INFINITY, seed };
      const result = await offerLoad(send, prompts, load);
      if (result.summary.failed > 0) throw failedRequestsError('bench latency', result);
      if (iter >= numWarmup) latencies.push(result.summary.durationS);
    }
    if (context.signal.aborted) return;
    const summary = summarizeBatchLatency(latencies);
    context.stdout.write(`${formatLatencyReport(summary, { batchSize, inputLen, outputLen })}\n`);
    const settings = {
      batch_size: batchSize,
      num_iters_warmup: numWarmup,
      num_iters: numIters,
    };
    await writeResultFile(bench, engine, settings, (config) => latencyResultJson(config, summary));
  });
}
