import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, serveForTest, type TestServer, withExtras } from './helpers/serve.js';
import { TINY_MODEL_DIR } from './helpers/tiny-model.js';

setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc') as () => void;

type Outcome = 'completed' | 'aborted';

describe('soak: 200 requests at concurrency 32 with random aborts (CPU runtime, loopback)', () => {
  let engine: FerrumEngine;
  let t: TestServer;
  const rand = seededRandom(2024);
  /** Requests cancelled by a timer: some may be cancelled before they reach the engine. */
  let numCancelled = 0;
  beforeAll(async () => {
    engine = await createEngine({
      model: TINY_MODEL_DIR,
      device: 'cpu',
      maxModelLen: 512,
      maxKvTokens: 8192,
      maxNumSeqs: 32,
    });
    t = await serveForTest(engine);
  });
  afterAll(async () => {
    await t?.server.close();
    await engine?.shutdown();
  });

  /** One request of a random kind; aborts some mid-way (dropping the stream or cancelling the fetch). */
  async function request(i: number): Promise<Outcome> {
    const model = engine.modelName;
    const maxTokens = 4 + Math.floor(rand() * 28);
    const kind = rand();
    const abortAfterChunks = rand() < 0.25 ? 1 + Math.floor(rand() * maxTokens) : -1;
    const cancelAfterMs = rand() < 0.1 ? Math.floor(rand() * 30) : -1;
    const controller = new AbortController();
    if (cancelAfterMs >= 0) {
      numCancelled++;
      setTimeout(() => controller.abort(), cancelAfterMs);
    }
    const options = { signal: controller.signal };
    const prompt = `Request ${i}: once upon a time ${'there was a fox '.repeat(1 + (i % 7))}`;
    try {
      if (kind < 0.25) {
        const body = withExtras({ model, prompt, max_tokens: maxTokens }, { ignore_eos: true });
        const res = await t.client.completions.create(body, options);
        expect(res.usage?.completion_tokens).toBe(maxTokens);
        return 'completed';
      }
      const stream =
        kind < 0.7
          ? await t.client.completions.create(
              { model, prompt, max_tokens: maxTokens, stream: true, seed: i },
              options,
            )
          : await t.client.chat.completions.create(
              { model, messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens, stream: true },
              options,
            );
      let chunks = 0;
      let finished = false;
      for await (const chunk of stream) {
        if (++chunks === abortAfterChunks) return 'aborted';
        if (chunk.choices[0]?.finish_reason) finished = true;
      }
      expect(finished).toBe(true);
      return 'completed';
    } catch (error) {
      if (controller.signal.aborted) return 'aborted';
      throw error;
    }
  }

  async function runBatch(first: number, count: number, concurrency: number): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    let next = first;
    const worker = async () => {
      while (next < first + count) outcomes.push(await request(next++));
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return outcomes;
  }

  async function settledHeapBytes(): Promise<number> {
    await eventually(() => engine.status().numRunning === 0 && engine.status().numWaiting === 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  }

  it('completes or aborts every request, leaks no KV slot and keeps memory steady', async () => {
    const { numKvSlots } = engine.status();
    const firstHalf = await runBatch(0, 100, 32);
    const heapAfterFirst = await settledHeapBytes();
    const secondHalf = await runBatch(100, 100, 32);
    const heapAfterSecond = await settledHeapBytes();
    const outcomes = [...firstHalf, ...secondHalf];
    expect(outcomes).toHaveLength(200);
    const aborted = outcomes.filter((o) => o === 'aborted').length;
    expect(aborted).toBeGreaterThan(20);
    expect(aborted).toBeLessThan(120);
    expect(engine.status()).toMatchObject({ numRunning: 0, numWaiting: 0, numFreeKvSlots: numKvSlots });
    const finished = engine.metrics().requestSuccessTotal;
    const numFinished = finished.stop + finished.length + finished.abort;
    expect(finished.stop + finished.length).toBeGreaterThanOrEqual(200 - aborted);
    expect(numFinished).toBeLessThanOrEqual(200);
    expect(numFinished).toBeGreaterThanOrEqual(200 - numCancelled);
    expect(finished.error).toBe(0);
    // 100 more requests must not leave a lasting footprint (a leak per request would show as megabytes).
    expect(heapAfterSecond - heapAfterFirst).toBeLessThan(8 * 1024 * 1024);
  });
});
