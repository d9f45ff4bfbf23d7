import { seededRandom } from '@ferrum/types';
import { type LatencySummary, summarize } from './latency-summary.js';
import type { BenchPrompt } from './prompt-dataset.js';
import type { RequestResult } from './stream-request.js';

/** How load is offered: a cap on requests in flight and/or a Poisson arrival rate. */
export interface LoadShape {
  /** Most requests in flight at once; Infinity for no cap. */
  readonly maxConcurrency: number;
  /** Mean arrivals per second (Poisson); Infinity sends every request at once. */
  readonly requestRate: number;
  /** Seed of the arrival times. */
  readonly seed: number;
}

/** Aggregate results of a benchmark run; latencies in milliseconds, throughputs per second. */
export interface BenchmarkSummary {
  readonly completed: number;
  readonly failed: number;
  /** Wall time from the first request sent to the last one finished. */
  readonly durationS: number;
  readonly totalInputTokens: number;
  readonly totalOutputTokens: number;
  readonly requestThroughput: number;
  readonly inputThroughput: number;
  readonly outputThroughput: number;
  readonly totalTokenThroughput: number;
  readonly maxConcurrencyObserved: number;
  readonly ttftMs: LatencySummary;
  /** Time per output token after the first: (e2el − ttft) / (output tokens − 1). */
  readonly tpotMs: LatencySummary;
  readonly itlMs: LatencySummary;
  readonly e2elMs: LatencySummary;
}

/** Everything a run measured: the summary and each request's result, in prompt order. */
export interface BenchmarkResult {
  readonly summary: BenchmarkSummary;
  readonly requests: readonly RequestResult[];
}

/**
 * Send one request and time it. Must not reject: a failure is a result with `ok: false`, so that one
 * failed request neither stops the run nor leaves the others unobserved.
 */
export type SendRequest = (prompt: BenchPrompt) => Promise<RequestResult>;

/**
 * Offer `prompts` through `send`, shaped by `load`, and summarize the run: the load loop shared by the
 * online benchmark (HTTP) and the offline ones (the engine in this process).
 */
export async function offerLoad(
  send: SendRequest,
  prompts: readonly BenchPrompt[],
  load: LoadShape,
): Promise<BenchmarkResult> {
  const random = seededRandom(load.seed);
  const results: RequestResult[] = new Array(prompts.length);
  let inFlight = 0;
  let maxInFlight = 0;
  const waiters: (() => void)[] = [];
  const acquire = async () => {
    while (inFlight >= load.maxConcurrency) await new Promise<void>((resolve) => waiters.push(resolve));
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
  };
  const release = () => {
    inFlight--;
    waiters.shift()?.();
  };
  const start = performance.now();
  const running: Promise<void>[] = [];
  for (const [i, prompt] of prompts.entries()) {
    if (i > 0 && Number.isFinite(load.requestRate)) {
      // Exponential gaps make a Poisson process of the given rate.
      const gapMs = (-Math.log(1 - random()) / load.requestRate) * 1000;
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    await acquire();
    running.push(
      send(prompt)
        .then((result) => {
          results[i] = result;
        })
        .finally(release),
    );
  }
  await Promise.all(running);
  const durationS = (performance.now() - start) / 1000;
  return { summary: summarizeRun(results, durationS, maxInFlight), requests: results };
}

function summarizeRun(
  results: readonly RequestResult[],
  durationS: number,
  maxInFlight: number,
): BenchmarkSummary {
  const ok = results.filter((r) => r.ok);
  const totalInputTokens = ok.reduce((sum, r) => sum + r.promptTokens, 0);
  const totalOutputTokens = ok.reduce((sum, r) => sum + r.outputTokens, 0);
  const tpots = ok.filter((r) => r.outputTokens > 1).map((r) => (r.e2elMs - r.ttftMs) / (r.outputTokens - 1));
  return {
    completed: ok.length,
    failed: results.length - ok.length,
    durationS,
    totalInputTokens,
    totalOutputTokens,
    requestThroughput: ok.length / durationS,
    inputThroughput: totalInputTokens / durationS,
    outputThroughput: totalOutputTokens / durationS,
    totalTokenThroughput: (totalInputTokens + totalOutputTokens) / durationS,
    maxConcurrencyObserved: maxInFlight,
    ttftMs: summarize(ok.map((r) => r.ttftMs)),
    tpotMs: summarize(tpots),
    itlMs: summarize(ok.flatMap((r) => r.itlMs)),
    e2elMs: summarize(ok.map((r) => r.e2elMs)),
  };
}
