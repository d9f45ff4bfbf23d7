import { writeFile } from 'node:fs/promises';
import { FerrumError, isFerrumError } from '@ferrum/types';
import { benchResultJson, failedRequestsError, formatBenchReport } from '../bench/bench-report.js';
import { filePrompts, randomPrompts } from '../bench/prompt-dataset.js';
import { runServeBenchmark } from '../bench/serve-benchmark.js';
import type { CliContext } from '../cli-context.js';
import { fetchFailureReason } from '../fetch-failure-reason.js';
import { numberOption, parseOptions, stringOption } from '../parse-options.js';

export const BENCH_SERVE_USAGE = `Usage: ferrum bench serve --base-url URL [options]

Load-test any OpenAI-compatible server with streaming completions and report TTFT, TPOT, ITL and
end-to-end latency (mean, median, p99) and throughput.

  --base-url URL          server root, e.g. http://127.0.0.1:8000
  --model NAME            model to ask for (default: the first of /v1/models)
  --concurrency C         most requests in flight (default: no cap)
  --request-rate R        mean requests per second, Poisson arrivals (default: all at once)
  --num-prompts N         requests to send (default 100)
  --input-len I           prompt tokens of random prompts (default 128)
  --output-len O          tokens to generate per request, EOS ignored (default 128)
  --dataset random|FILE   random token ids, or a file (.jsonl with "prompt"/"prompt_token_ids", or lines)
  --vocab-size V          random token ids are drawn from [0, V) (default 256)
  --temperature T         default 0
  --seed S                seed of prompts and arrivals (default 0)
  --api-key KEY           bearer key (default: OPENAI_API_KEY)
  --result-file F         also write the results as JSON`;

/**
 * `ferrum bench serve`. Bad flags are `invalid_argument` (exit 2); a server that cannot be reached or
 * listed, or any failed request, is a runtime failure (exit 1) reported in one line, after the report.
 */
export async function benchServeCommand(args: readonly string[], context: CliContext): Promise<number> {
  const parsed = parseOptions('bench serve', args, {
    'base-url': { type: 'string' },
    model: { type: 'string' },
    concurrency: { type: 'string' },
    'request-rate': { type: 'string' },
    'num-prompts': { type: 'string' },
    'input-len': { type: 'string' },
    'output-len': { type: 'string' },
    dataset: { type: 'string' },
    'vocab-size': { type: 'string' },
    temperature: { type: 'string' },
    seed: { type: 'string' },
    'api-key': { type: 'string' },
    'result-file': { type: 'string' },
  });
  const baseUrl = stringOption(parsed, 'base-url')?.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (!baseUrl) throw new FerrumError('invalid_argument', 'bench serve: --base-url is required');
  const numPrompts = numberOption(parsed, 'num-prompts', { min: 1, integer: true }) ?? 100;
  const inputLen = numberOption(parsed, 'input-len', { min: 1, integer: true }) ?? 128;
  const outputLen = numberOption(parsed, 'output-len', { min: 1, integer: true }) ?? 128;
  const seed = numberOption(parsed, 'seed', { integer: true }) ?? 0;
  const dataset = stringOption(parsed, 'dataset') ?? 'random';
  const vocabSize = numberOption(parsed, 'vocab-size', { min: 1, integer: true }) ?? 256;
  const apiKey = stringOption(parsed, 'api-key') ?? context.env.OPENAI_API_KEY;
  const model = stringOption(parsed, 'model') ?? (await firstModel(baseUrl, apiKey));
  const prompts =
    dataset === 'random'
      ? randomPrompts(numPrompts, inputLen, vocabSize, seed)
      : await filePrompts(dataset, numPrompts);
  const maxConcurrency =
    numberOption(parsed, 'concurrency', { min: 1, integer: true }) ?? Number.POSITIVE_INFINITY;
  const requestRate = numberOption(parsed, 'request-rate', { min: 0.001 }) ?? Number.POSITIVE_INFINITY;
  const temperature = numberOption(parsed, 'temperature', { min: 0 }) ?? 0;
  context.stderr.write(
    `benchmarking ${model} at ${baseUrl}: ${numPrompts} requests, ${inputLen} in / ${outputLen} out\n`,
  );
  const result = await runServeBenchmark(
    { baseUrl, model, apiKey, outputLen, temperature, ignoreEos: true },
    prompts,
    { maxConcurrency, requestRate, seed },
  );
  context.stdout.write(`${formatBenchReport(result.summary)}\n`);
  const resultFile = stringOption(parsed, 'result-file');
  if (resultFile) {
    const config = {
      backend: 'openai-completions',
      base_url: baseUrl,
      model,
      dataset,
      num_prompts: numPrompts,
      input_len: inputLen,
      output_len: outputLen,
      max_concurrency: Number.isFinite(maxConcurrency) ? maxConcurrency : null,
      request_rate: Number.isFinite(requestRate) ? requestRate : 'inf',
      seed,
    };
    await writeFile(resultFile, `${JSON.stringify(benchResultJson(config, result), null, 2)}\n`);
  }
  // After the report and the result file: a partly failed run still tells what it measured.
  if (result.summary.failed > 0) throw failedRequestsError('bench serve', result);
  return 0;
}

/** The first model `GET /v1/models` lists. Failures are runtime errors (exit 1), not usage errors. */
async function firstModel(baseUrl: string, apiKey: string | undefined): Promise<string> {
  const url = `${baseUrl}/v1/models`;
  let body: { data?: { id?: unknown }[] } | null;
  try {
    const res = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
    if (!res.ok) {
      const hint = res.status === 401 ? ' (check --api-key or OPENAI_API_KEY)' : '';
      throw new FerrumError('internal', `bench serve: ${url} answered HTTP ${res.status}${hint}`);
    }
    body = (await res.json()) as typeof body;
  } catch (error) {
    if (isFerrumError(error)) throw error;
    throw new FerrumError('internal', `bench serve: cannot reach ${url}: ${fetchFailureReason(error)}`, {
      cause: error,
    });
  }
  const id = body?.data?.[0]?.id;
  if (typeof id !== 'string' || id === '') {
    throw new FerrumError('not_found', `bench serve: ${url} lists no model; pass --model`);
  }
  return id;
}
