import { createEngine, warmUp } from '@ferrum/engine';
import { describe, expect, it } from 'vitest';
import { goldenContinuation } from './collect.js';
import { fixtureDir, readGolden } from './fixture-models.js';

describe('warmUp', () => {
  it('runs its requests to the end, the later ones hitting the first one’s prefix, and leaves the engine serving as before', async () => {
    const engine = await createEngine({ model: fixtureDir('qwen3-qknorm'), maxKvTokens: 1024 });
    await warmUp(engine, { requests: 3, prefixTokens: 40 });
    const m = engine.metrics();
    expect(m.requestSuccessTotal.length).toBe(3);
    expect(m.generationTokensTotal).toBe(3 * 4);
    expect(m.promptTokensTotal).toBe(3 * (40 + 8));
    // Requests 2 and 3 find request 1's 40 prefix tokens (and no more: their suffixes differ).
    expect(m.prefixCacheHitsTotal).toBe(2 * 40);
    const status = engine.status();
    expect(status.numRunning + status.numWaiting).toBe(0);
    expect(status.numFreeKvSlots).toBe(status.numKvSlots);

    const golden = readGolden('qwen3-qknorm');
    expect(await goldenContinuation(engine, golden.prompts[0])).toEqual(golden.greedy[0]);
    await engine.shutdown();
  });

  it('cuts its prefix to fit the engine’s maximum model length, and sends nothing when no request fits', async () => {
    const engine = await createEngine({
      model: fixtureDir('qwen3-qknorm'),
      maxKvTokens: 1024,
      maxModelLen: 30,
    });
    await warmUp(engine, { requests: 2 });
    expect(engine.metrics().promptTokensTotal).toBe(2 * (30 - 4));
    expect(engine.metrics().prefixCacheHitsTotal).toBe(30 - 4 - 8);

    const tiny = await createEngine({
      model: fixtureDir('qwen3-qknorm'),
      maxKvTokens: 1024,
      maxModelLen: 11,
    });
    await warmUp(tiny);
    expect(tiny.metrics().requestSuccessTotal.length).toBe(0);
    await Promise.all([engine.shutdown(), tiny.shutdown()]);
  });
});
