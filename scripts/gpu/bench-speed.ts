// Issue 7's speed table for a dummy-weight model (Qwen3-4B shape, bf16) on one GPU: every figure next to
// its floor from ceilings measured in the same run (copy bandwidth, cuBLASLt bf16 GEMM rate).
//   decode floor  = (weight bytes + KV bytes read) / bandwidth, per step, scaled to tokens/s
//   prefill floor = max(FLOPs / GEMM rate, weight bytes / bandwidth)
// Runtime level (one executor, greedy device sampling): prefill time and decode step time, graphs on/off.
// Engine level (createEngine, device cuda, dummy weights, random token-id prompts, EOS ignored, greedy):
// c1 TTFT 32/512/2048 and decode; c8 512 in/256 out; c1 and c8 again with repetition, presence and frequency
// penalties, c8 with top-5 logprobs and with temperature 0.7 / top-k 40 / top-p 0.9; c64 and c256 saturation; the
// agent workload (2,000-token system prompt shared by 16 sequential turns of 64 new tokens, prefix cache on);
// steady latency (8 streams in flight: 7 long decodes while a new 512-token prompt arrives every second; ITL p99
// against p50).
//   usage: tsx scripts/gpu/bench-speed.ts <config.json> <out.json> [parts: ceilings,runtime,engine,eager]
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createEngine, warmUp } from '../../packages/engine/src/index.js';
import type { ModelExecutor } from '../../packages/interfaces/src/index.js';
import { loadModelConfig } from '../../packages/models/src/index.js';
import {
  createCudaBackend,
  measureDeviceCeilings,
  weightLayout,
} from '../../packages/runtime-cuda/src/index.js';
import type { ForwardBatch, SamplingParams } from '../../packages/types/src/index.js';
import { randomPrompts, speedEngineOptions } from './engine-setup.js';
import { syntheticBatch } from './synthetic-batch.js';

const [configFile, outFile, partsArg] = process.argv.slice(2);
const parts = new Set((partsArg ?? 'ceilings,runtime,engine,eager').split(','));
const dir = mkdtempSync(path.join(os.tmpdir(), 'ferrum-speed-'));
copyFileSync(configFile, path.join(dir, 'config.json'));
const config = await loadModelConfig(dir);
const weightBytes = weightLayout(config).arenaBytes;
const slotBytes = 2 * config.numLayers * config.numKvHeads * config.headDim * 2;
const rows: { figure: string; value: number; unit: string; floor?: number; ofFloor?: string }[] = [];
const json: Record<string, unknown> = { config: path.basename(configFile), weightBytes, slotBytes };
const log = (message: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${message}`);

// --- ceilings ---------------------------------------------------------------------------------------
const ceilings = measureDeviceCeilings();
const bandwidth = ceilings.bandwidthBytesPerSecond;
const gemmRate = ceilings.gemmFlopsPerSecond;
json.ceilings = ceilings;
rows.push({ figure: 'copy bandwidth (D2D, read+write)', value: bandwidth / 1e9, unit: 'GB/s' });
rows.push({ figure: 'bf16 GEMM 8192³ (cuBLASLt)', value: gemmRate / 1e12, unit: 'TFLOP/s' });
log(`ceilings: ${(bandwidth / 1e9).toFixed(0)} GB/s, ${(gemmRate / 1e12).toFixed(0)} TFLOP/s`);

/** Seconds of one decode step of `seqs` rows over `context` tokens each, at the bandwidth floor. */
const decodeStepFloor = (seqs: number, context: number) =>
  (weightBytes + seqs * context * slotBytes) / bandwidth;
/** Seconds of a prefill of `tokens` new tokens over `prefix` cached ones, at the larger of the two floors. */
function prefillFloor(tokens: number, prefix = 0): number {
  const h = config.hiddenSize;
  const qDim = config.numHeads * config.headDim;
  const kvDim = config.numKvHeads * config.headDim;
  const perLayer = h * (qDim + 2 * kvDim) + qDim * h + 3 * h * config.intermediateSize;
  const linear = 2 * tokens * perLayer * config.numLayers + 2 * config.vocabSize * h; // lm_head: last row only
  // QKᵀ and PV over the causal triangle plus the cached prefix.
  const pairs = tokens * prefix + (tokens * (tokens + 1)) / 2;
  const attention = 4 * pairs * qDim * config.numLayers;
  return Math.max((linear + attention) / gemmRate, (weightBytes + (prefix + tokens) * slotBytes) / bandwidth);
}
function add(figure: string, value: number, unit: string, floor?: number, higherIsBetter = false) {
  const ofFloor =
    floor === undefined
      ? undefined
      : `${(100 * (higherIsBetter ? value / floor : floor / value)).toFixed(0)}%`;
  rows.push({ figure, value, unit, floor, ofFloor });
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];

// --- runtime level ----------------------------------------------------------------------------------
const batch = (seqs: number, context: number, newTokens: number, firstSeq = 0) =>
  syntheticBatch(config, seqs, context, newTokens, firstSeq);
/** Median wall time of forwarding each batch in turn; the batches are built before the clock starts. */
async function timeForwards(executor: ModelExecutor, batches: ForwardBatch[]): Promise<number> {
  const times: number[] = [];
  for (const b of batches) {
    const t0 = performance.now();
    await executor.forward(b);
    times.push(performance.now() - t0);
  }
  return median(times);
}
async function runtimeFigures(enforceEager: boolean) {
  const tag = enforceEager ? 'eager' : 'graphs';
  const executor = await createCudaBackend().loadModel({
    modelDir: dir,
    config,
    loadFormat: 'dummy',
    maxKvTokens: 64 * 1024 + 2048,
    maxBatchTokens: 4096,
    maxBatchSeqs: 64,
    seed: 1,
    backendOptions: { enforceEager },
  });
  const gpuSeconds = () =>
    (executor as unknown as { memory(): { gpuStepSeconds: number } }).memory().gpuStepSeconds;
  if (!enforceEager) {
    for (const prompt of [32, 512, 2048]) {
      await executor.forward(batch(1, prompt, prompt));
      const gpuBefore = gpuSeconds();
      const ms = await timeForwards(
        executor,
        Array.from({ length: 5 }, () => batch(1, prompt, prompt)),
      );
      add(`runtime prefill ${prompt} tokens`, ms, 'ms', prefillFloor(prompt) * 1e3);
      add(
        `  GPU time, prefill ${prompt}`,
        ((gpuSeconds() - gpuBefore) * 1e3) / 5,
        'ms',
        prefillFloor(prompt) * 1e3,
      );
    }
  }
  for (const seqs of [1, 8, 32, 64]) {
    const context = 512;
    for (let s = 0; s < seqs; s += 4) {
      const n = Math.min(4, seqs - s);
      await executor.forward(batch(n, context, context, s));
    }
    let length = context;
    await executor.forward(batch(seqs, ++length, 1)); // captures the bucket's graph
    const gpuBefore = gpuSeconds();
    const steps = 48;
    const ms = await timeForwards(
      executor,
      Array.from({ length: steps }, () => batch(seqs, ++length, 1)),
    );
    const gpuMs = ((gpuSeconds() - gpuBefore) * 1e3) / steps;
    add(
      `runtime decode B=${seqs} ctx~540 (${tag})`,
      (seqs * 1000) / ms,
      'tok/s',
      seqs / decodeStepFloor(seqs, length),
      true,
    );
    // The device's share of a step: the rest of the wall time is host work (staging, the thread hop back to JS).
    add(`  GPU time a step, B=${seqs} (${tag})`, gpuMs, 'ms', decodeStepFloor(seqs, length) * 1e3);
  }
  json[`runtimeInfo_${tag}`] = (executor as unknown as { memory(): unknown }).memory();
  await executor.dispose();
}

// --- engine level -----------------------------------------------------------------------------------
const randomPrompt = randomPrompts(config.vocabSize);
interface Timing {
  ttftMs: number;
  itlMs: number[];
  tokens: number;
  endMs: number;
}
type Engine = Awaited<ReturnType<typeof createEngine>>;
/** The penalties of the "with penalties" figures: every decode step then carries sparse logit adjustments. */
const PENALTIES: Partial<SamplingParams> = {
  repetitionPenalty: 1.1,
  presencePenalty: 0.2,
  frequencyPenalty: 0.2,
};
/** A common chat setting: the device chain's top-k and top-p thresholds every step. */
const CHAT_SAMPLING: Partial<SamplingParams> = { temperature: 0.7, topK: 40, topP: 0.9, seed: 1 };
async function request(
  engine: Engine,
  prompt: number[],
  maxTokens: number,
  sampling: Partial<SamplingParams> = {},
): Promise<Timing> {
  const t0 = performance.now();
  let last = t0;
  let ttftMs = -1;
  let tokens = 0;
  const itlMs: number[] = [];
  const stream = engine.generate({
    prompt: { tokenIds: prompt },
    sampling: { temperature: 0, maxTokens, ignoreEos: true, ...sampling },
  });
  for await (const chunk of stream) {
    const now = performance.now();
    if (chunk.tokenIds.length === 0) continue;
    if (ttftMs < 0) ttftMs = now - t0;
    else itlMs.push((now - last) / chunk.tokenIds.length);
    last = now;
    tokens += chunk.tokenIds.length;
  }
  return { ttftMs, itlMs, tokens, endMs: last - t0 };
}
async function openEngine(enforceEager: boolean): Promise<Engine> {
  // c256 × (512 + 256) tokens fit without preemption.
  const engine = await createEngine(speedEngineOptions(dir, 224 * 1024, enforceEager));
  await warmUp(engine); // as `ferrum serve` does before it listens
  return engine;
}
async function concurrent(
  engine: Engine,
  clients: number,
  input: number,
  output: number,
  sampling: Partial<SamplingParams> = {},
) {
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: clients }, () => request(engine, randomPrompt(input), output, sampling)),
  );
  const wallS = (performance.now() - t0) / 1e3;
  const tokens = results.reduce((sum, r) => sum + r.tokens, 0);
  const ttft = results.map((r) => r.ttftMs);
  const itl = results.flatMap((r) => r.itlMs);
  return { wallS, tokens, outputTokPerS: tokens / wallS, ttft, itl };
}
/** ITLs of 7 long decodes while a new 512-token prompt (64 new tokens) arrives every second for 10 s. */
async function steadyLatency(engine: Engine): Promise<number[]> {
  const long = Array.from({ length: 7 }, () => request(engine, randomPrompt(512), 2048));
  const arrivals: Promise<Timing>[] = [];
  for (let second = 0; second < 10; second++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    arrivals.push(request(engine, randomPrompt(512), 64));
  }
  await Promise.all(arrivals);
  return (await Promise.all(long)).flatMap((r) => r.itlMs);
}
async function engineFigures(enforceEager: boolean) {
  const tag = enforceEager ? 'eager' : 'graphs';
  const engine = await openEngine(enforceEager);
  await concurrent(engine, 8, 512, 8); // warm-up: cuBLASLt plans, graphs of the buckets used
  await request(engine, randomPrompt(64), 64);
  if (!enforceEager) {
    for (const length of [32, 512, 2048]) {
      const ttfts: number[] = [];
      for (let i = 0; i < 5; i++) ttfts.push((await request(engine, randomPrompt(length), 1)).ttftMs);
      add(`c1 TTFT ${length}-token prompt`, median(ttfts), 'ms', prefillFloor(length) * 1e3);
      // Each of the five: a layout's first two steps run eagerly, the second is then captured (StepGraphs).
      json[`c1TtftMs${length}`] = ttfts;
    }
  }
  const c1 = await request(engine, randomPrompt(512), 256);
  const decodeRate = (c1.tokens - 1) / ((c1.endMs - c1.ttftMs) / 1e3);
  add(`c1 decode 512 in/256 out (${tag})`, decodeRate, 'tok/s', 1 / decodeStepFloor(1, 640), true);
  const c8 = await concurrent(engine, 8, 512, 256);
  add(`c8 512/256 output tok/s (${tag})`, c8.outputTokPerS, 'tok/s', 8 / decodeStepFloor(8, 640), true);
  add(`c8 TTFT p50 (${tag})`, median(c8.ttft), 'ms');
  add(`c8 TTFT p99 (${tag})`, quantile(c8.ttft, 0.99), 'ms');
  add(`c8 ITL p50 (${tag})`, median(c8.itl), 'ms', decodeStepFloor(8, 640) * 1e3);
  add(`c8 ITL p99 (${tag})`, quantile(c8.itl, 0.99), 'ms');
  json[`c8_${tag}`] = { ...c8, ttft: undefined, itl: undefined };
  // Penalties and top logprobs: sampling work a plain greedy row skips (sparse adjustments; the top-N selection).
  const c1p = await request(engine, randomPrompt(512), 256, PENALTIES);
  const penaltyRate = (c1p.tokens - 1) / ((c1p.endMs - c1p.ttftMs) / 1e3);
  add(`c1 decode with penalties (${tag})`, penaltyRate, 'tok/s', 1 / decodeStepFloor(1, 640), true);
  const c8p = await concurrent(engine, 8, 512, 256, PENALTIES);
  add(
    `c8 output tok/s with penalties (${tag})`,
    c8p.outputTokPerS,
    'tok/s',
    8 / decodeStepFloor(8, 640),
    true,
  );
  const c8top = await concurrent(engine, 8, 512, 256, { logprobs: 5 });
  add(
    `c8 output tok/s with top-5 logprobs (${tag})`,
    c8top.outputTokPerS,
    'tok/s',
    8 / decodeStepFloor(8, 640),
    true,
  );
  const c8chat = await concurrent(engine, 8, 512, 256, CHAT_SAMPLING);
  add(
    `c8 output tok/s, temperature 0.7 top-k 40 top-p 0.9 (${tag})`,
    c8chat.outputTokPerS,
    'tok/s',
    8 / decodeStepFloor(8, 640),
    true,
  );
  if (!enforceEager) {
    const c64 = await concurrent(engine, 64, 512, 256);
    add('c64 512/256 output tok/s', c64.outputTokPerS, 'tok/s', 64 / decodeStepFloor(64, 640), true);
    add('c64 ITL p50', median(c64.itl), 'ms', decodeStepFloor(64, 640) * 1e3);
    const c256 = await concurrent(engine, 256, 512, 256);
    add('c256 512/256 output tok/s', c256.outputTokPerS, 'tok/s', 256 / decodeStepFloor(256, 640), true);
    add('c256 ITL p50', median(c256.itl), 'ms', decodeStepFloor(256, 640) * 1e3);
    add('c256 TTFT p50', median(c256.ttft), 'ms');
    const steady = await steadyLatency(engine);
    add('steady c8 ITL p50 (prompt/s arrivals)', median(steady), 'ms', decodeStepFloor(8, 1024) * 1e3);
    add('steady c8 ITL p99', quantile(steady, 0.99), 'ms');
    add('steady c8 ITL p99 / p50', quantile(steady, 0.99) / median(steady), '×');
    // Agent: one 2,000-token system prompt, 16 sequential turns each adding 64 new tokens.
    const system = randomPrompt(2000);
    const turns: number[] = [];
    for (let turn = 0; turn < 16; turn++) {
      turns.push((await request(engine, [...system, ...randomPrompt(64)], 8)).ttftMs);
    }
    add('agent TTFT turn 1 (2,064 tokens cold)', turns[0], 'ms', prefillFloor(2064) * 1e3);
    add(
      'agent TTFT turns 2-16 median (prefix hit)',
      median(turns.slice(1)),
      'ms',
      prefillFloor(64, 2000) * 1e3,
    );
    add('agent TTFT turns 2-16 max', Math.max(...turns.slice(1)), 'ms');
    json.agentTurnsMs = turns;
    json.engineMetrics = engine.metrics();
  }
  await engine.shutdown();
}

for (const [part, run] of [
  ['runtime', () => runtimeFigures(false)],
  ['eager', () => runtimeFigures(true)],
  ['engine', () => engineFigures(false)],
  ['eager', () => engineFigures(true)],
] as const) {
  if (!parts.has(part)) continue;
  try {
    await run();
    log(`${part} done`);
  } catch (error) {
    log(`${part} failed: ${(error as Error).stack ?? error}`);
    json[`${part}Error`] = String(error);
  }
}

json.rows = rows;
writeFileSync(outFile, JSON.stringify(json, null, 2));
const fmt = (v: number | undefined) => (v === undefined ? '' : v >= 100 ? v.toFixed(0) : v.toFixed(2));
console.log('| figure | value | unit | floor | vs floor |\n| --- | --- | --- | --- | --- |');
for (const r of rows) {
  const floor = r.floor === undefined ? '' : r.unit === 'tok/s' ? fmt(r.floor) : fmt(r.floor);
  console.log(`| ${r.figure} | ${fmt(r.value)} | ${r.unit} | ${floor} | ${r.ofFloor ?? ''} |`);
}
