import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { FIXTURE_NAMES, fixtureDir, GOLDEN_SAMPLING, readGolden } from './fixture-models.js';

// The whole pipeline (scheduler, KV manager, sampler, CPU runtime) against transformers' greedy
// continuations of the repo's fixtures: alone, and all prompts at once in shared steps.
describe.each(FIXTURE_NAMES)('engine on %s matches transformers greedy', (name) => {
  let engine: FerrumEngine;
  const golden = readGolden(name);

  beforeAll(async () => {
    engine = await createEngine({ model: fixtureDir(name), device: 'cpu', maxKvTokens: 2048, numThreads: 1 });
  });
  afterAll(() => engine.shutdown());

  it('one request at a time', async () => {
    for (const [i, prompt] of golden.prompts.entries()) {
      const out = await collect(engine.generate({ prompt: { tokenIds: prompt }, sampling: GOLDEN_SAMPLING }));
      expect(out.tokens[0], `prompt ${i}`).toEqual(golden.greedy[i]);
      expect(out.finishReasons[0]).toBe('length');
    }
  });

  it('all prompts batched together (with prefix-cache hits from the first run)', async () => {
    const outs = await Promise.all(
      golden.prompts.map((prompt) =>
        collect(engine.generate({ prompt: { tokenIds: prompt }, sampling: GOLDEN_SAMPLING })),
      ),
    );
    expect(outs.map((o) => o.tokens[0])).toEqual(golden.greedy);
    expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
  });
});
