import { createEngine, type FerrumEngine } from '@ferrum/engine';
import type { ComputeBackend, ModelExecutor, Scheduler } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import { createScheduler } from '@ferrum/scheduler';
import type { GenerateChunk, GenerateRequest } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Collected, collect } from './collect.js';
import { fixtureDir, readGolden } from './fixture-models.js';

const name = 'qwen3-qknorm';
const model = fixtureDir(name);
const golden = readGolden(name);

/**
 * A CPU backend whose forwards resolve `delayMs` late, logging when each starts and resolves. `early`: it
 * keeps the runtime's `previousTokens`, so the engine may launch a step before the previous one resolves.
 */
function slowBackend(events: string[], delayMs: number, early: boolean): ComputeBackend {
  const cpu = createCpuBackend();
  let numForwards = 0;
  return {
    specificationVersion: 'v1',
    name: 'cpu',
    probe: async () => ({ ...(await cpu.probe()), previousTokens: early }),
    async loadModel(spec): Promise<ModelExecutor> {
      const inner = await cpu.loadModel(spec);
      return {
        info: inner.info,
        kv: inner.kv,
        async forward(batch) {
          const n = numForwards++;
          events.push(`forward ${n}`);
          const result = await inner.forward(batch);
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          events.push(`resolved ${n}`);
          return result;
        },
        dispose: () => inner.dispose(),
      };
    },
  };
}

/** The default scheduler, logging each step it hands out. */
function loggingScheduler(events: string[], inner: Scheduler): Scheduler {
  let numSteps = 0;
  return {
    specificationVersion: 'v1',
    supportsAsyncScheduling: inner.supportsAsyncScheduling,
    add: (request) => inner.add(request),
    abort: (requestId) => inner.abort(requestId),
    finish: (seqId, reason) => inner.finish(seqId, reason),
    schedule() {
      const step = inner.schedule();
      if (step) events.push(`built ${numSteps++}`);
      return step;
    },
    complete: (step, tokenIds) => inner.complete(step, tokenIds),
    stateOf: (seqId) => inner.stateOf(seqId),
    hasWork: () => inner.hasWork(),
    stats: () => inner.stats(),
  };
}

/** Passes `stream` on, logging `token k` when its reader receives the request's k-th token. */
async function* logTokens(
  stream: AsyncIterable<GenerateChunk>,
  events: string[],
): AsyncIterable<GenerateChunk> {
  let numTokens = 0;
  for await (const chunk of stream) {
    for (let i = 0; i < chunk.tokenIds.length; i++) events.push(`token ${numTokens++}`);
    yield chunk;
  }
}

/** Events of one request run alone (8 greedy tokens, or up to `stopTokenId`) on a slow backend. */
async function eventsOf(asyncScheduling: boolean, stopTokenId?: number, early = false): Promise<string[]> {
  const events: string[] = [];
  const engine = await createEngine(
    { model, maxKvTokens: 1024, asyncScheduling },
    {
      backends: [slowBackend(events, 10, early)],
      scheduler: (context, kv) =>
        loggingScheduler(
          events,
          createScheduler({ maxNumSeqs: 8, maxNumBatchedTokens: 256, maxModelLen: context.maxModelLen }, kv),
        ),
    },
  );
  const expected = golden.greedy[0];
  const sampling =
    stopTokenId === undefined
      ? { temperature: 0, maxTokens: 8, ignoreEos: true }
      : { temperature: 0, maxTokens: 24, ignoreEos: true, stopTokenIds: [stopTokenId] };
  const out = await collect(
    logTokens(engine.generate({ prompt: { tokenIds: golden.prompts[0] }, sampling }), events),
  );
  const end = stopTokenId === undefined ? 8 : expected.indexOf(stopTokenId) + 1;
  expect(out.tokens[0]).toEqual(expected.slice(0, end));
  await engine.shutdown();
  return events;
}

const forwards = (events: string[]) => events.filter((e) => e.startsWith('forward')).length;

describe('async scheduling on the CPU runtime', () => {
  it('builds step N + 1 before the forward of step N resolves', async () => {
    const events = await eventsOf(true);
    // A prefill and seven decodes; each decode is built while the step before it runs.
    expect(forwards(events)).toBe(8);
    for (let n = 0; n < 7; n++) {
      const built = events.indexOf(`built ${n + 1}`);
      expect(built, `step ${n + 1}`).toBeGreaterThan(events.indexOf(`forward ${n}`));
      expect(built, `step ${n + 1}`).toBeLessThan(events.indexOf(`resolved ${n}`));
    }
    // Switched off, each step is built only once the one before resolved.
    const sequential = await eventsOf(false);
    for (let n = 0; n < 7; n++) {
      expect(sequential.indexOf(`built ${n + 1}`)).toBeGreaterThan(sequential.indexOf(`resolved ${n}`));
    }
  });

  it('with early launch, also launches step N + 1 before step N resolves', async () => {
    const events = await eventsOf(true, undefined, true);
    expect(forwards(events)).toBe(8);
    for (let n = 0; n < 7; n++) {
      expect(events.indexOf(`forward ${n + 1}`), `step ${n + 1}`).toBeLessThan(
        events.indexOf(`resolved ${n}`),
      );
    }
    // Without it (the runtime lacks previousTokens), step N + 1 goes to the runtime after N resolved.
    const late = await eventsOf(true);
    for (let n = 0; n < 7; n++) {
      expect(late.indexOf(`forward ${n + 1}`)).toBeGreaterThan(late.indexOf(`resolved ${n}`));
    }
  });

  it("streams step N's tokens before it builds step N + 2", async () => {
    // Step N (the prefill, then decodes) samples token N. Step N + 1 is in flight by then, so the reader
    // need not wait for N + 2's planning and launch.
    for (const early of [false, true]) {
      const events = await eventsOf(true, undefined, early);
      for (let n = 0; n + 2 < 8; n++) {
        const token = events.indexOf(`token ${n}`);
        expect(token, `token ${n}, early launch ${early}`).toBeGreaterThan(events.indexOf(`resolved ${n}`));
        expect(token, `token ${n}, early launch ${early}`).toBeLessThan(events.indexOf(`built ${n + 2}`));
      }
    }
  });

  it('does not run a step built ahead whose only sequence stopped in the step before', async () => {
    const stop = golden.greedy[0][5];
    const end = golden.greedy[0].indexOf(stop) + 1;
    const events = await eventsOf(true, stop);
    // One forward per token: the step built for the token after the stop id was dropped unrun.
    expect(events.filter((e) => e.startsWith('built'))).toHaveLength(end + 1);
    expect(forwards(events)).toBe(end);
    expect(forwards(await eventsOf(false, stop))).toBe(end);
    // Launched early, that step runs before the stop is known: one wasted forward, its row ignored.
    expect(forwards(await eventsOf(true, stop, true))).toBe(end + 1);
  });

  describe('streams what the plain loop streams', () => {
    let overlapped: FerrumEngine;
    let plain: FerrumEngine;
    beforeAll(async () => {
      const options = { model, maxKvTokens: 2048, maxNumSeqs: 16, maxNumBatchedTokens: 64, numThreads: 1 };
      overlapped = await createEngine({ ...options, asyncScheduling: true });
      plain = await createEngine({ ...options, asyncScheduling: false });
    });
    afterAll(async () => {
      await overlapped?.shutdown();
      await plain?.shutdown();
    });

    /** Run `requests` at once on both engines; both must stream the same and free every slot. */
    async function both(requests: GenerateRequest[]): Promise<Collected[]> {
      const run = (engine: FerrumEngine) => Promise.all(requests.map((r) => collect(engine.generate(r))));
      const [a, b] = await Promise.all([run(overlapped), run(plain)]);
      const strip = (c: Collected) => ({ ...c, chunks: c.chunks.map(({ usage, ...rest }) => rest) });
      expect(a.map(strip)).toEqual(b.map(strip));
      for (const engine of [overlapped, plain]) {
        expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
      }
      return a;
    }

    it('greedy, with sequences ending on a stop id while the next step holds their row', async () => {
      const greedy = { temperature: 0, maxTokens: 24, ignoreEos: true };
      const requests: GenerateRequest[] = golden.prompts.map((prompt, i) => ({
        prompt: { tokenIds: prompt },
        // Odd requests stop at the first occurrence of their sixth greedy token.
        sampling: i % 2 === 1 ? { ...greedy, stopTokenIds: [golden.greedy[i][5]] } : greedy,
      }));
      const outs = await both(requests);
      outs.forEach((out, i) => {
        const expected = golden.greedy[i];
        const end = i % 2 === 1 ? expected.indexOf(expected[5]) + 1 : expected.length;
        expect(out.tokens[0], `prompt ${i}`).toEqual(expected.slice(0, end));
        expect(out.finishReasons[0]).toBe(i % 2 === 1 ? 'stop' : 'length');
      });
    });

    it('seeded sampling with n > 1, logprobs and a long prompt prefilled in chunks', async () => {
      const long = Array.from({ length: 150 }, (_, i) => 5 + ((i * 37) % 400));
      await both([
        {
          prompt: { tokenIds: long },
          sampling: { temperature: 0.9, seed: 3, maxTokens: 12, ignoreEos: true },
        },
        { prompt: { text: 'Once upon a time' }, sampling: { n: 3, temperature: 1, seed: 5, maxTokens: 10 } },
        { prompt: { tokenIds: golden.prompts[1] }, sampling: { temperature: 0, maxTokens: 6, logprobs: 2 } },
        { prompt: { text: 'a fox' }, sampling: { temperature: 0.7, topP: 0.9, seed: 8, maxTokens: 16 } },
      ]);
    });

    it('stop strings cut the text at the same token', async () => {
      const prompt = { text: 'Once upon a time there was' };
      const sampling = { temperature: 0, maxTokens: 20, ignoreEos: true };
      const [full] = await both([{ prompt, sampling }]);
      const text = full.texts[0];
      const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 2);
      const [cut] = await both([{ prompt, sampling: { ...sampling, stop: [stop] } }]);
      expect(cut.finishReasons[0]).toBe('stop');
      expect(cut.texts[0]).toBe(text.slice(0, text.indexOf(stop)));
      expect(cut.tokens[0].length).toBeLessThan(full.tokens[0].length);
    });
  });
});
