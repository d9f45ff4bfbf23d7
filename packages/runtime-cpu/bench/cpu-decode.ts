/**
 * Single-stream decode throughput of the CPU backend on dummy weights of a real model's shape.
 *
 *   pnpm --filter @ferrum/runtime-cpu bench [-- --config <config.json>] [--threads N] [--simd avx2]
 *     [--prompt 32] [--tokens 64] [--prefills 3] [--dtype bf16] [--json out.json]
 *
 * Default shape: ../shared/fixtures/configs/qwen3-0.6b.json (bf16). Prints prefill and decode speed, TPOT
 * p50/p99, the SIMD path and the weight bandwidth decode reaches (weights bytes / TPOT). The prompt is prefilled
 * 1 + `prefills` times into the same slots: the first (cold: the KV pool's pages and the buffers touched for the
 * first time) is reported on its own, the median of the rest as the prefill speed.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { normalizeModelConfig } from '@ferrum/models';
import {
  type DType,
  type ForwardBatch,
  type ForwardResult,
  type RowSampling,
  resolveSamplingParams,
} from '@ferrum/types';
import { type CpuModelExecutor, createCpuBackend } from '../src/index.js';

const repoRoot = path.resolve(import.meta.dirname, '..', '..', '..');
const defaultConfig = path.resolve(repoRoot, '..', 'shared', 'fixtures', 'configs', 'qwen3-0.6b.json');

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: defaultConfig },
    threads: { type: 'string', default: '0' },
    simd: { type: 'string' },
    prompt: { type: 'string', default: '32' },
    tokens: { type: 'string', default: '64' },
    prefills: { type: 'string', default: '3' },
    dtype: { type: 'string', default: 'bf16' },
    json: { type: 'string' },
  },
});

if (!existsSync(values.config)) {
  console.log(`skipped: ${values.config} not found (pass --config <config.json>)`);
  process.exit(0);
}
const config = normalizeModelConfig(JSON.parse(readFileSync(values.config, 'utf8')), values.config);
const promptLength = Number(values.prompt);
const decodeTokens = Number(values.tokens);
const warmPrefills = Math.max(1, Number(values.prefills));

const backend = createCpuBackend();
const capabilities = await backend.probe();
if (!capabilities.available) throw new Error(capabilities.reason);
const loadStart = performance.now();
const executor = (await backend.loadModel({
  modelDir: path.dirname(values.config),
  config,
  loadFormat: 'dummy',
  dtype: values.dtype as DType,
  seed: 1,
  numThreads: Number(values.threads),
  maxBatchTokens: Math.max(promptLength, 1),
  maxBatchSeqs: 1,
  maxKvTokens: promptLength + decodeTokens,
  backendOptions: { swapSpaceTokens: 0, ...(values.simd ? { simd: values.simd } : {}) },
})) as CpuModelExecutor;
const loadMs = performance.now() - loadStart;

const greedy: RowSampling = {
  requestId: 'bench',
  params: resolveSamplingParams({ temperature: 0 }),
  seed: 0,
  outputTokenIds: new Int32Array(0),
  promptTokenIds: new Int32Array(0),
  needsHostLogits: false,
};

/** One sequence's step: `tokens` new tokens after `cached` ones, in slots 0.. in order. */
function step(tokens: Int32Array, cached: number): ForwardBatch {
  const total = cached + tokens.length;
  const kvIndices = Int32Array.from({ length: total }, (_, i) => i);
  return {
    tokenIds: tokens,
    positions: kvIndices.slice(cached),
    qIndptr: Int32Array.of(0, tokens.length),
    kvIndptr: Int32Array.of(0, total),
    kvIndices,
    slotMapping: kvIndices.slice(cached),
    sampleRows: Int32Array.of(tokens.length - 1),
    sampling: [greedy],
    numSeqs: 1,
    numTokens: tokens.length,
  };
}

const prompt = Int32Array.from({ length: promptLength }, (_, i) => (i * 7919 + 13) % config.vocabSize);
const timedPrefill = async (): Promise<[ForwardResult, number]> => {
  const start = performance.now();
  const prefill = await executor.forward(step(prompt, 0));
  return [prefill, performance.now() - start];
};
let [result, coldPrefillMs] = await timedPrefill();
const prefillMs: number[] = [];
for (let i = 0; i < warmPrefills; i++) {
  const [prefill, ms] = await timedPrefill();
  result = prefill;
  prefillMs.push(ms);
}
prefillMs.sort((a, b) => a - b);
const warmPrefillMs = prefillMs[Math.floor(prefillMs.length / 2)];

const stepMs: number[] = [];
for (let i = 0; i < decodeTokens; i++) {
  const start = performance.now();
  result = await executor.forward(step(Int32Array.of(result.tokens[0]), promptLength + i));
  stepMs.push(performance.now() - start);
}
await executor.dispose();

// The first steps warm caches and page in the KV pool; report the steady state.
const steady = stepMs.slice(Math.min(4, stepMs.length - 1)).sort((a, b) => a - b);
const percentile = (p: number) => steady[Math.min(steady.length - 1, Math.floor((p / 100) * steady.length))];
const meanMs = steady.reduce((sum, ms) => sum + ms, 0) / steady.length;
const weightBytes = executor.description.weightBytes;
const report = {
  model: path.basename(values.config, '.json'),
  dtype: values.dtype,
  cpu: cpus()[0]?.model.trim(),
  simd: executor.description.simd,
  threads: executor.description.numThreads,
  promptTokens: promptLength,
  decodeTokens,
  loadMs: Math.round(loadMs),
  prefillTokensPerSecond: promptLength / (warmPrefillMs / 1000),
  coldPrefillTokensPerSecond: promptLength / (coldPrefillMs / 1000),
  decodeTokensPerSecond: 1000 / meanMs,
  tpotP50Ms: percentile(50),
  tpotP99Ms: percentile(99),
  weightGiB: weightBytes / 2 ** 30,
  weightBandwidthGBps: weightBytes / (percentile(50) / 1000) / 1e9,
};
console.log(
  `${report.model} ${report.dtype} on ${report.cpu} (${report.simd}, ${report.threads} threads): ` +
    `decode ${report.decodeTokensPerSecond.toFixed(2)} tok/s (TPOT p50 ${report.tpotP50Ms.toFixed(1)} ms, ` +
    `p99 ${report.tpotP99Ms.toFixed(1)} ms, ${report.weightBandwidthGBps.toFixed(1)} GB/s of weights), ` +
    `prefill ${report.prefillTokensPerSecond.toFixed(1)} tok/s over ${promptLength} tokens ` +
    `(first ${report.coldPrefillTokensPerSecond.toFixed(1)}), load ${report.loadMs} ms`,
);
if (values.json) {
  mkdirSync(path.dirname(path.resolve(values.json)), { recursive: true });
  writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
}
