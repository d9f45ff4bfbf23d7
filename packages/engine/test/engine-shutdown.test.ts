import { createEngine } from '@ferrum/engine';
import { describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';

const model = fixtureDir('qwen3-qknorm');
const long = { temperature: 0, maxTokens: 200, ignoreEos: true };

describe('engine shutdown', () => {
  it('drains: running requests finish, new ones are refused, the runtime is released', async () => {
    const engine = await createEngine({ model, maxKvTokens: 4096 });
    const running = collect(engine.generate({ prompt: { tokenIds: [5, 6, 7] }, sampling: long }));
    const closing = engine.shutdown({ drain: true });
    expect(() => engine.generate({ prompt: { tokenIds: [5] } })).toThrow(
      expect.objectContaining({ code: 'queue_full' }),
    );
    const out = await running;
    await closing;
    expect(out.finishReasons[0]).toBe('length');
    expect(out.tokens[0]).toHaveLength(200);
    await engine.shutdown(); // idempotent
  });

  it('without drain aborts what runs and frees its KV', async () => {
    const engine = await createEngine({ model, maxKvTokens: 4096 });
    const running = collect(engine.generate({ prompt: { tokenIds: [5, 6, 7] }, sampling: long }));
    await engine.shutdown();
    const out = await running;
    expect(out.finishReasons[0]).toBe('abort');
    expect(out.tokens[0].length).toBeLessThan(200);
    expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
  });
});
