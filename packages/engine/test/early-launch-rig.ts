import { createEngine, type FerrumEngine } from '@ferrum/engine';
import type { ComputeBackend, KvCacheManager, LogitsProcessor } from '@ferrum/interfaces';
import { createScheduler } from '@ferrum/scheduler';
import type { GenerateChunk, GenerateRequest } from '@ferrum/types';
import { expect } from 'vitest';
import { checkedScheduler } from './checked-scheduler.js';
import { type Collected, collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';
import { capturedKvCache } from './kv-capture.js';
import { createSpyBackend, type SpyRecord } from './spy-backend.js';

// What the early-launch tests share: engines in three modes over a spying backend, a run of requests with
// aborts, and checks of how they ended.

/**
 * early: async scheduling, the runtime's previousTokens kept (steps may launch before the previous one's
 * tokens reach the host); late: async scheduling, previousTokens hidden; plain: no async scheduling.
 */
export type Mode = 'early' | 'late' | 'plain';

export const MODES: readonly Mode[] = ['early', 'late', 'plain'];

const model = fixtureDir('qwen3-qknorm');

/** An engine with its spy and KV manager. */
export interface Rig {
  readonly engine: FerrumEngine;
  readonly spy: SpyRecord;
  readonly kv: KvCacheManager;
}

export interface RigOptions {
  /** The backend under the spy; the CPU runtime (which samples greedy rows only) by default. */
  readonly inner?: ComputeBackend;
  readonly logitsProcessors?: readonly LogitsProcessor[];
}

export async function createRig(mode: Mode, options: RigOptions = {}): Promise<Rig> {
  const spy = createSpyBackend({
    inner: options.inner,
    previousTokens: mode === 'late' ? false : undefined,
  });
  const kv = capturedKvCache();
  const limits = { maxNumSeqs: 16, maxNumBatchedTokens: 64 };
  const engine = await createEngine(
    { model, maxKvTokens: 2048, numThreads: 1, asyncScheduling: mode !== 'plain', ...limits },
    {
      backends: [spy.backend],
      kvCacheManager: kv.factory,
      scheduler: ({ maxModelLen }, manager) =>
        checkedScheduler(createScheduler({ ...limits, maxModelLen }, manager)),
      logitsProcessors: options.logitsProcessors,
    },
  );
  return { engine, spy, kv: kv.manager() };
}

/**
 * Run `requests` at once; a request with `abortAfter` is aborted once that many chunks arrived. `onChunk`
 * runs after every chunk.
 */
export async function runAll(
  engine: FerrumEngine,
  requests: readonly TestRequest[],
  onChunk?: () => void,
): Promise<Collected[]> {
  return Promise.all(
    requests.map(async ({ abortAfter, ...request }) => {
      const controller = new AbortController();
      const stream = engine.generate(request, { signal: controller.signal });
      let seen = 0;
      return collect({
        async *[Symbol.asyncIterator]() {
          for await (const chunk of stream) {
            yield chunk;
            onChunk?.();
            if (++seen === abortAfter) controller.abort();
          }
        },
      });
    }),
  );
}

export type TestRequest = GenerateRequest & { readonly abortAfter?: number };

/**
 * Chunks without usage (prefix-cache hits differ between runs) or request ids (counted per engine), and
 * with logprobs as tokenId/logprob.
 */
export function comparable(out: Collected) {
  const strip = ({ usage, requestId, logprobs, ...rest }: GenerateChunk) => ({
    ...rest,
    logprobs: logprobs?.map(({ tokenId, logprob }) => ({ tokenId, logprob })),
  });
  return out.chunks.map(strip);
}

/** Every request ended exactly once, with its final chunk last; the KV pool is whole and consistent. */
export function expectCleanEnd(rig: Rig, outs: readonly Collected[]): void {
  for (const out of outs) {
    const ends = out.chunks.filter((c) => c.finishReason !== undefined);
    const numSeqs = out.tokens.length;
    expect(ends).toHaveLength(numSeqs);
    for (let index = 0; index < numSeqs; index++) {
      const own = out.chunks.filter((c) => c.index === index);
      expect(own.at(-1)?.finishReason, `sequence ${index}: nothing after its end`).toBeDefined();
    }
  }
  rig.kv.checkIntegrity();
  const status = rig.engine.status();
  expect(status.numRunning + status.numWaiting).toBe(0);
  expect(status.numFreeKvSlots).toBe(status.numKvSlots);
}
