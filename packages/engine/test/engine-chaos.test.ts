import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { createDeviceSamplingBackend } from './device-sampling-backend.js';
import { fixtureDir } from './fixture-models.js';
import { createSpyBackend } from './spy-backend.js';

// The real CPU runtime under KV pressure: greedy requests whose combined need exceeds the pool, random
// aborts, preemption by recompute and by swap through the runtime's host tier. Every surviving request
// must produce exactly what it produces alone, and the pool must be whole afterwards. Steps are launched
// early (before the previous one's tokens reach the host) where the runtime and the step allow it; the
// `device` case does the same with seeded random sampling on a runtime that samples on the "device".
const model = fixtureDir('llama3-gqa-tied');

interface Job {
  readonly id: string;
  readonly prompt: number[];
  readonly maxTokens: number;
  /** Abort once this many chunks arrived (deterministic, unlike a timer). */
  readonly abortAfterChunks: number | null;
}

function makeJobs(count: number, seed: number): Job[] {
  const rand = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({
    id: `job-${i}`,
    prompt: Array.from({ length: 8 + Math.floor(rand() * 56) }, () => 3 + Math.floor(rand() * 500)),
    maxTokens: 8 + Math.floor(rand() * 40),
    abortAfterChunks: rand() < 0.25 ? 1 + Math.floor(rand() * 7) : null,
  }));
}

async function runAll(engine: FerrumEngine, jobs: readonly Job[], withAborts: boolean, seeded: boolean) {
  return Promise.all(
    jobs.map(async (job) => {
      const controller = new AbortController();
      const stream = engine.generate(
        {
          id: job.id,
          prompt: { tokenIds: job.prompt },
          sampling: seeded
            ? { temperature: 0.9, seed: Number(job.id.slice(4)), maxTokens: job.maxTokens, ignoreEos: true }
            : { temperature: 0, maxTokens: job.maxTokens, ignoreEos: true },
        },
        { signal: controller.signal },
      );
      const limit = withAborts ? job.abortAfterChunks : null;
      let seen = 0;
      return collect({
        async *[Symbol.asyncIterator]() {
          for await (const chunk of stream) {
            yield chunk;
            if (++seen === limit) controller.abort();
          }
        },
      });
    }),
  );
}

describe.each([
  { pressure: 0.7, mode: 'recompute' as const, device: false },
  { pressure: 0.9, mode: 'swap' as const, device: false },
  { pressure: 0.98, mode: 'swap' as const, device: false },
  { pressure: 0.9, mode: 'recompute' as const, device: true },
])(
  'CPU engine at $pressure KV pressure, preemption by $mode, device sampling $device',
  ({ pressure, mode, device }) => {
    it('finishes every request exactly once, matches the unpressured outputs, leaves the pool whole', async () => {
      const jobs = makeJobs(24, Math.round(pressure * 1000));
      // The reference samples seeded rows on the host, without async scheduling.
      const reference = await createEngine({ model, maxKvTokens: 8192, asyncScheduling: false });
      const expected = await runAll(reference, jobs, false, device);
      await reference.shutdown();
      // Size the pool so the jobs' whole need is 1/(1-pressure) of what is left after the longest one fits.
      const need = jobs.reduce((sum, j) => sum + j.prompt.length + j.maxTokens, 0);
      const longest = Math.max(...jobs.map((j) => j.prompt.length + j.maxTokens));
      const numSlots = Math.max(longest + 8, Math.round(need * (1 - pressure)));
      const spy = createSpyBackend({ inner: device ? createDeviceSamplingBackend() : undefined });
      const engine = await createEngine(
        {
          model,
          maxKvTokens: numSlots,
          maxModelLen: longest + 8,
          preemptionMode: mode,
          swapSpaceTokens: need,
          maxNumSeqs: 16,
          maxNumBatchedTokens: 64,
        },
        { backends: [spy.backend] },
      );
      const outs = await runAll(engine, jobs, true, device);
      for (const [i, out] of outs.entries()) {
        const reason = out.finishReasons[0];
        const finals = out.chunks.filter((c) => c.finishReason !== undefined);
        expect(finals, jobs[i].id).toHaveLength(1);
        if (reason === 'abort') {
          expect(expected[i].tokens[0].slice(0, out.tokens[0].length)).toEqual(out.tokens[0]);
        } else {
          expect(reason).toBe('length');
          expect(out.tokens[0]).toEqual(expected[i].tokens[0]);
        }
      }
      expect(spy.overlap.previousTokens).toBeGreaterThan(0);
      const metrics = engine.metrics();
      expect(metrics.numPreemptionsTotal).toBeGreaterThan(0);
      expect(metrics.requestSuccessTotal.abort).toBeGreaterThan(0);
      if (mode === 'swap') {
        expect(spy.swaps.out).toBeGreaterThan(0);
        expect(spy.swaps.in).toBeGreaterThan(0);
        expect(spy.swaps.in).toBeLessThanOrEqual(spy.swaps.out);
      }
      const status = engine.status();
      expect(status.numRunning + status.numWaiting).toBe(0);
      expect(status.numFreeKvSlots).toBe(status.numKvSlots);
      await engine.shutdown();
    });
  },
);
