import { createEngine } from '@ferrum/engine';
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';
import { createSpyBackend } from './spy-backend.js';

const model = fixtureDir('qwen3-qknorm');
const greedy = (maxTokens: number) => ({ temperature: 0, maxTokens, ignoreEos: true });

function randomIds(count: number, seed: number): number[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => 5 + Math.floor(random() * 500));
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('engine scheduling on the CPU runtime', () => {
  it('computes a shared 200-token prefix once', async () => {
    const { backend, steps } = createSpyBackend();
    const engine = await createEngine({ model, maxKvTokens: 4096 }, { backends: [backend] });
    const prefix = randomIds(200, 1);
    const a = [...prefix, ...randomIds(10, 2)];
    const b = [...prefix, ...randomIds(12, 3)];
    const first = await collect(engine.generate({ prompt: { tokenIds: a }, sampling: greedy(1) }));
    const afterFirst = sum(steps.flat());
    const second = await collect(engine.generate({ prompt: { tokenIds: b }, sampling: greedy(1) }));
    // The second request forwards only its 12 own tokens: the 200 shared ones come from the radix cache.
    expect(afterFirst).toBe(210);
    expect(sum(steps.flat()) - afterFirst).toBe(12);
    expect(engine.metrics().prefixCacheHitsTotal).toBe(200);
    expect(second.tokens[0]).toHaveLength(1);
    expect(second.chunks.at(-1)?.usage?.cachedPromptTokens).toBe(200);
    expect(first.tokens[0]).toHaveLength(1);
    await engine.shutdown();
  });

  it('prefills a long prompt in chunks while another request decodes every step', async () => {
    const { backend, steps } = createSpyBackend();
    const options = { model, maxKvTokens: 4096, maxNumBatchedTokens: 64, maxNumSeqs: 8 };
    const engine = await createEngine(options, { backends: [backend] });
    const short = randomIds(5, 4);
    const long = randomIds(300, 5);
    const solo = await collect(engine.generate({ prompt: { tokenIds: short }, sampling: greedy(30) }));
    steps.length = 0;
    const decoding = engine.generate({ id: 'short', prompt: { tokenIds: short }, sampling: greedy(30) });
    const iterator = decoding[Symbol.asyncIterator]();
    const firstChunk = await iterator.next();
    const prefilling = collect(
      engine.generate({ id: 'long', prompt: { tokenIds: long }, sampling: greedy(2) }),
    );
    const rest = await collect({ [Symbol.asyncIterator]: () => iterator });
    await prefilling;
    const chunkSteps = steps.filter((shape) => shape.some((n) => n > 1));
    // 300 tokens under a 64-token budget shared with one decode: at least five chunks, each beside a decode.
    expect(chunkSteps.length).toBeGreaterThanOrEqual(5);
    for (const shape of chunkSteps) {
      expect(shape).toContain(1);
      expect(sum(shape)).toBeLessThanOrEqual(64);
    }
    // Sharing steps with the chunks did not change the decoding request's tokens.
    expect([...(firstChunk.value?.tokenIds ?? []), ...rest.tokens[0]]).toEqual(solo.tokens[0]);
    await engine.shutdown();
  });

  it('frees every KV slot when a stream is abandoned mid-way', async () => {
    const engine = await createEngine({ model, maxKvTokens: 4096, enablePrefixCaching: false });
    let seen = 0;
    for await (const _ of engine.generate({
      prompt: { tokenIds: randomIds(20, 6) },
      sampling: greedy(500),
    })) {
      if (++seen === 3) break;
    }
    await new Promise((r) => setTimeout(r, 20));
    const status = engine.status();
    expect(status.numRunning + status.numWaiting).toBe(0);
    expect(status.numFreeKvSlots).toBe(status.numKvSlots);
    expect(engine.metrics().requestSuccessTotal.abort).toBe(1);
    await engine.shutdown();
  });

  it('aborts through an AbortSignal and by id', async () => {
    const engine = await createEngine({ model, maxKvTokens: 4096 });
    const controller = new AbortController();
    const stream = engine.generate(
      { prompt: { tokenIds: [5, 6, 7] }, sampling: greedy(500) },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 5);
    const out = await collect(stream);
    expect(out.finishReasons[0]).toBe('abort');
    const byId = engine.generate({ id: 'x', prompt: { tokenIds: [5, 6, 7] }, sampling: greedy(500) });
    expect(engine.abort('x')).toBe(true);
    expect(engine.abort('x')).toBe(false);
    expect((await collect(byId)).finishReasons[0]).toBe('abort');
    expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
    await engine.shutdown();
  });
});
