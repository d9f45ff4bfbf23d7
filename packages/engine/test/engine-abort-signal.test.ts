import { getEventListeners } from 'node:events';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';

describe('a caller signal shared by many requests', () => {
  let engine: FerrumEngine;
  beforeAll(async () => {
    engine = await createEngine({ model: fixtureDir('qwen3-qknorm'), device: 'cpu', maxKvTokens: 1024 });
  });
  afterAll(() => engine?.shutdown());

  it('holds no abort listener once a request has finished, however it ended', async () => {
    const shared = new AbortController();
    const sampling = { temperature: 0, maxTokens: 4, ignoreEos: true };
    for (let i = 0; i < 3; i++) {
      await collect(
        engine.generate({ prompt: { tokenIds: [1, 2, 3] }, sampling }, { signal: shared.signal }),
      );
      expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
    }
    // Ended by the engine's abort() rather than by the signal.
    const stream = engine.generate(
      { id: 'ended-early', prompt: { tokenIds: [1, 2, 3] }, sampling },
      { signal: shared.signal },
    );
    engine.abort('ended-early');
    expect((await collect(stream)).finishReasons[0]).toBe('abort');
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);
  });
});
