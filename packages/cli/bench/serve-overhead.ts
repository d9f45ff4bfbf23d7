/**
 * Does HTTP handling stall the step loop? The same load (C streams of random 64-token prompts, 128
 * tokens out, EOS ignored) runs twice on the CPU runtime with the repo's tiny model: straight through
 * `engine.generate`, and as SSE streams through the server, with the load generator (`runServeBenchmark`)
 * in a child process. Reported per concurrency: output tokens/s, the engine's own mean inter-token
 * latency (its step cadence, from its metrics), the serving process's CPU time per token, and its event-loop delay.
 *
 * Run: `pnpm --filter @ferrum/cli bench` (writes bench/out/serve-overhead.json).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { startServer } from '@ferrum/server';
import { defaultModelDir, randomPrompts, runServeBenchmark } from '../src/index.js';

const CONCURRENCIES = [16, 64, 256];
const INPUT_LEN = 64;
const OUTPUT_LEN = 128;
const ROUNDS = 2;
const VOCAB = 512;

interface Measure {
  outputTokensPerS: number;
  /** CPU time of this (serving) process per generated token: engine plus, over HTTP, the server. */
  processCpuUsPerToken: number;
  engineMeanItlMs: number;
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

/** Mean of the engine's inter-token latency histogram over the work done since `before`. */
function engineItlMs(engine: FerrumEngine, before: { sum: number; count: number }): number {
  const h = engine.metrics().interTokenLatencySeconds;
  return ((h.sum - before.sum) / Math.max(1, h.count - before.count)) * 1000;
}

/** A run's generated tokens and its duration (seconds) as the load generator measured it. */
interface RunResult {
  readonly tokens: number;
  readonly seconds: number;
}

async function measure(engine: FerrumEngine, run: () => Promise<RunResult>): Promise<Measure> {
  const { sum, count } = engine.metrics().interTokenLatencySeconds;
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const cpu = process.cpuUsage();
  const { tokens, seconds } = await run();
  const used = process.cpuUsage(cpu);
  loop.disable();
  return {
    outputTokensPerS: tokens / seconds,
    processCpuUsPerToken: (used.user + used.system) / tokens,
    engineMeanItlMs: engineItlMs(engine, { sum, count }),
    loopDelayP50Ms: loop.percentile(50) / 1e6,
    loopDelayP99Ms: loop.percentile(99) / 1e6,
    loopDelayMaxMs: loop.max / 1e6,
  };
}

/** Load straight through the engine: each stream is consumed with no work per chunk. */
async function direct(engine: FerrumEngine, concurrency: number, seed: number): Promise<RunResult> {
  const prompts = randomPrompts(concurrency, INPUT_LEN, VOCAB, seed);
  const start = performance.now();
  const sampling = { maxTokens: OUTPUT_LEN, temperature: 0, ignoreEos: true };
  const counts = await Promise.all(
    prompts.map(async (p) => {
      let n = 0;
      for await (const chunk of engine.generate({ prompt: p as { tokenIds: number[] }, sampling }))
        n += chunk.tokenIds.length;
      return n;
    }),
  );
  return { tokens: counts.reduce((a, b) => a + b, 0), seconds: (performance.now() - start) / 1000 };
}

/** Load through HTTP from a child process (this script with `--client`), so the client's parsing is not ours. */
function overHttp(url: string, concurrency: number, seed: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const args = [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      '--client',
      url,
      String(concurrency),
      String(seed),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`client exited ${code}`));
      const [tokens, seconds] = out.trim().split(' ').map(Number);
      resolve({ tokens, seconds });
    });
  });
}

async function client(url: string, concurrency: number, seed: number): Promise<void> {
  const prompts = randomPrompts(concurrency, INPUT_LEN, VOCAB, seed);
  const target = { baseUrl: url, model: 'tiny', outputLen: OUTPUT_LEN, temperature: 0, ignoreEos: true };
  const result = await runServeBenchmark(target, prompts, {
    maxConcurrency: concurrency,
    requestRate: Infinity,
    seed,
  });
  if (result.summary.failed > 0) throw new Error(`${result.summary.failed} requests failed`);
  process.stdout.write(`${result.summary.totalOutputTokens} ${result.summary.durationS}\n`);
}

async function main(): Promise<void> {
  const engine = await createEngine({
    model: defaultModelDir()!,
    device: 'cpu',
    servedModelName: 'tiny',
    maxNumSeqs: 256,
    maxKvTokens: 65_536,
    enablePrefixCaching: false,
  });
  const server = await startServer(engine, { port: 0 });
  const rows: Record<string, unknown>[] = [];
  await direct(engine, 16, 999); // warm-up
  let seed = 1;
  for (const concurrency of CONCURRENCIES) {
    for (let round = 0; round < ROUNDS; round++) {
      const d = await measure(engine, () => direct(engine, concurrency, seed++));
      const h = await measure(engine, () => overHttp(server.url, concurrency, seed++));
      rows.push({ concurrency, round, direct: d, http: h });
      const f = (m: Measure) =>
        `${m.outputTokensPerS.toFixed(0).padStart(6)} tok/s  ITL ${m.engineMeanItlMs.toFixed(2).padStart(6)} ms  ` +
        `cpu ${m.processCpuUsPerToken.toFixed(0).padStart(4)} us/tok  loop p99 ${m.loopDelayP99Ms.toFixed(1).padStart(5)} ms`;
      console.log(`C=${String(concurrency).padStart(3)}  direct ${f(d)}  |  http ${f(h)}`);
    }
  }
  await server.close();
  await engine.shutdown();
  const outDir = join(dirname(fileURLToPath(import.meta.url)), 'out');
  mkdirSync(outDir, { recursive: true });
  const meta = {
    model: 'fixtures/tiny-models/qwen3-qknorm',
    device: 'cpu',
    inputLen: INPUT_LEN,
    outputLen: OUTPUT_LEN,
  };
  writeFileSync(join(outDir, 'serve-overhead.json'), `${JSON.stringify({ ...meta, rows }, null, 2)}\n`);
}

if (process.argv[2] === '--client') {
  await client(process.argv[3], Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
