// The engine's own share of a TTFT (issue 7): the real engine (scheduler, KV manager, step loop and runner,
// output streams) on the CPU against a stand-in runtime whose forward() answers after a set time, so that the
// host work between `generate()` and the runtime's `forward()` call ("before"), and between the step's result
// and the first streamed chunk ("after"), can be read without a GPU. The stand-in has CUDA's capabilities
// (every sampling op on the device, `previousTokens`, so steps launch early), runs its steps one after another
// as a GPU stream does, and needs no native build.
//
// Workload, as `scripts/gpu/trace-ttft.ts`: sequential 512-token prompts, then agent turns (a 2,000-token system
// prompt shared by turns of 64 new tokens, prefix cache on), 8 output tokens each; medians after 5 warm-up
// requests. `--step-ms 0` answers on the next turn of the event loop; a positive value holds each step that long,
// waited for as `--wait` says: `poll` (setImmediate turns: the thread stays awake and allocates, so V8 scavenges
// every ~15 ms), `busy` (one synchronous loop that allocates nothing and blocks the event loop until the step is
// due) or `timer` (setTimeout: the thread sleeps).
//
// Run: node --import "$(pwd)/packages/engine/node_modules/tsx/dist/esm/index.mjs" --conditions=@ferrum/source \
//        scripts/engine-ttft-host.ts [--step-ms 0] [--wait poll|busy|timer] [--requests 60]
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createEngine } from '../packages/engine/src/index.js';
import type { ComputeBackend, ModelExecutor } from '../packages/interfaces/src/index.js';
import {
  DEVICE_SAMPLING_OPS,
  type ForwardBatch,
  type ForwardResult,
  type ModelInfo,
  seededRandom,
} from '../packages/types/src/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    'step-ms': { type: 'string', default: '0' },
    wait: { type: 'string', default: 'poll' },
    requests: { type: 'string', default: '60' },
  },
});
const wait = values.wait;
if (wait !== 'poll' && wait !== 'busy' && wait !== 'timer')
  throw new Error('--wait must be poll, busy or timer');
const stepMs = Number(values['step-ms']);
const numRequests = Number(values.requests);
const WARM_UP = 5;

/** When each forward was called and when it settled. */
const forwards: { calledMs: number; settledMs: number }[] = [];

function standInBackend(): ComputeBackend {
  let lastDoneMs = 0;
  return {
    specificationVersion: 'v1',
    name: 'stand-in',
    probe: async () => ({
      available: true,
      device: 'stand-in',
      score: 1,
      dtypes: ['bf16'],
      totalMemoryBytes: 2 ** 40,
      freeMemoryBytes: 2 ** 40,
      maxBatchTokens: 4096,
      deviceSampling: DEVICE_SAMPLING_OPS,
      cudaGraphs: false,
      pagedAttention: true,
      tensorParallelSize: 1,
      previousTokens: true,
      features: [],
    }),
    async loadModel(spec): Promise<ModelExecutor> {
      const numKvSlots = spec.maxKvTokens ?? 64 * 1024;
      const info: ModelInfo = {
        config: spec.config,
        weightDtype: 'bf16',
        numKvSlots,
        numHostKvSlots: 0,
        maxBatchTokens: spec.maxBatchTokens,
        maxBatchSeqs: spec.maxBatchSeqs,
        backend: 'stand-in',
      };
      // Greedy tokens "sampled on the device"; the engine copies them out before the next-but-one forward.
      const result: ForwardResult = {
        tokens: new Int32Array(spec.maxBatchTokens).fill(7),
        logprobs: new Float32Array(spec.maxBatchTokens),
      };
      return {
        info,
        kv: {
          numSlots: numKvSlots,
          numHostSlots: 0,
          copySlots: async () => undefined,
          swapOut: async () => undefined,
          swapIn: async () => undefined,
        },
        forward(_batch: ForwardBatch): Promise<ForwardResult> {
          const record = { calledMs: performance.now(), settledMs: 0 };
          forwards.push(record);
          const doneMs = Math.max(record.calledMs, lastDoneMs) + stepMs;
          lastDoneMs = doneMs;
          return new Promise((settle) => {
            const done = () => {
              record.settledMs = performance.now();
              settle(result);
            };
            const poll = () => (performance.now() < doneMs ? void setImmediate(poll) : done());
            if (wait === 'timer') {
              setTimeout(done, Math.max(0, doneMs - performance.now()));
            } else if (wait === 'busy') {
              setImmediate(() => {
                while (performance.now() < doneMs);
                done();
              });
            } else {
              setImmediate(poll);
            }
          });
        },
        dispose: async () => undefined,
      };
    },
  };
}

// The repo's tiny Qwen3 with a longer position limit, so that the agent's 2,064-token prompts fit.
const model = mkdtempSync(join(os.tmpdir(), 'ferrum-ttft-host-'));
cpSync(resolve(ROOT, 'fixtures/tiny-models/qwen3-qknorm'), model, { recursive: true });
const configFile = join(model, 'config.json');
const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>;
writeFileSync(configFile, JSON.stringify({ ...config, max_position_embeddings: 8192 }));
const engine = await createEngine(
  { model, maxKvTokens: 64 * 1024, maxNumSeqs: 256, maxNumBatchedTokens: 4096, maxModelLen: 8192 },
  { backends: [standInBackend()] },
);

const random = seededRandom(1);
const randomPrompt = (length: number) => Array.from({ length }, () => 5 + Math.floor(random() * 400));

/** [TTFT, before, step, after] in ms of one request. */
async function traced(prompt: number[]): Promise<number[]> {
  const first = forwards.length;
  const t0 = performance.now();
  let chunkMs = 0;
  const stream = engine.generate({
    prompt: { tokenIds: prompt },
    sampling: { temperature: 0, maxTokens: 8, ignoreEos: true },
  });
  for await (const chunk of stream) {
    if (chunk.tokenIds.length > 0 && chunkMs === 0) chunkMs = performance.now();
  }
  const step = forwards[first];
  return [chunkMs - t0, step.calledMs - t0, step.settledMs - step.calledMs, chunkMs - step.settledMs];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(
  `| workload (step ${stepMs} ms, ${wait}) | TTFT ms | engine before step | step | engine after step |`,
);
console.log('| --- | --- | --- | --- | --- |');
const system = randomPrompt(2000);
for (const [label, prompt] of [
  ['512-token prompt', () => randomPrompt(512)],
  ['agent turn', () => [...system, ...randomPrompt(64)]],
] as const) {
  const rows: number[][] = [];
  for (let i = 0; i < numRequests; i++) rows.push(await traced(prompt()));
  const cells = [0, 1, 2, 3].map((k) => median(rows.slice(WARM_UP).map((r) => r[k])).toFixed(3));
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}
await engine.shutdown();
