// A runtime stand-in for measuring the host's share of a TTFT without a GPU (`engine-ttft-host.ts`,
// `serve-ttft-host.ts`): it has CUDA's capabilities (every sampling op on the device, `previousTokens`, so
// steps launch early), runs its steps one after another as a GPU stream does, answers each forward after a
// set time with greedy token 7, and needs no native build.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ComputeBackend, ModelExecutor } from '../packages/interfaces/src/index.js';
import {
  DEVICE_SAMPLING_OPS,
  type ForwardBatch,
  type ForwardResult,
  type ModelInfo,
} from '../packages/types/src/index.js';

/**
 * How a step's time is waited out: `poll` (setImmediate turns: the thread stays awake and allocates, so V8
 * scavenges every ~15 ms), `busy` (one synchronous loop that allocates nothing and blocks the event loop
 * until the step is due) or `timer` (setTimeout: the thread sleeps).
 */
export type StepWait = 'poll' | 'busy' | 'timer';

/** When a forward was called and when it settled, in ms since the Unix epoch (comparable across processes). */
export interface ForwardTimes {
  readonly calledMs: number;
  settledMs: number;
}

/** `performance.now()` on the Unix epoch's scale, so that two processes' stamps compare. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The stand-in backend: each forward takes `stepMs` (0: the next turn of the event loop); `forwards` records them. */
export function standInBackend(stepMs: number, wait: StepWait, forwards: ForwardTimes[]): ComputeBackend {
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
          const record: ForwardTimes = { calledMs: epochMs(), settledMs: 0 };
          forwards.push(record);
          const now = performance.now();
          const doneMs = Math.max(now, lastDoneMs) + stepMs;
          lastDoneMs = doneMs;
          return new Promise((settle) => {
            const done = () => {
              record.settledMs = epochMs();
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

/**
 * A copy of the repo's tiny Qwen3 whose position limit is 8,192, so that 2,064-token agent prompts fit; its
 * weights are never read by the stand-in.
 */
export function standInModelDir(): string {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const model = mkdtempSync(join(os.tmpdir(), 'ferrum-stand-in-'));
  cpSync(resolve(root, 'fixtures/tiny-models/qwen3-qknorm'), model, { recursive: true });
  const configFile = join(model, 'config.json');
  const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(configFile, JSON.stringify({ ...config, max_position_embeddings: 8192 }));
  return model;
}
