import { createEngine, type FerrumEngine } from '@ferrum/engine';
import type { LogitsProcessor } from '@ferrum/interfaces';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { fixtureDir } from './fixture-models.js';

const model = fixtureDir('qwen3-qknorm');
const prompt = { text: 'Once upon a time there was a little fox' };

describe('engine sampling features on the CPU runtime', () => {
  let engine: FerrumEngine;
  beforeAll(async () => {
    engine = await createEngine({ model, maxKvTokens: 4096 });
  });
  afterAll(() => engine.shutdown());

  it('reproduces a seeded request alone and inside a batch', async () => {
    const sampling = { temperature: 1, topP: 0.9, maxTokens: 16, seed: 1234, ignoreEos: true };
    const alone = await collect(engine.generate({ prompt, sampling }));
    const again = await collect(engine.generate({ prompt, sampling }));
    const [batched] = await Promise.all([
      collect(engine.generate({ prompt, sampling })),
      collect(
        engine.generate({ prompt: { text: 'a different prompt' }, sampling: { ...sampling, seed: 9 } }),
      ),
      collect(
        engine.generate({ prompt: { tokenIds: [7, 8, 9] }, sampling: { temperature: 0.7, maxTokens: 20 } }),
      ),
    ]);
    expect(again.tokens[0]).toEqual(alone.tokens[0]);
    expect(batched.tokens[0]).toEqual(alone.tokens[0]);
    const other = await collect(engine.generate({ prompt, sampling: { ...sampling, seed: 4321 } }));
    expect(other.tokens[0]).not.toEqual(alone.tokens[0]);
  });

  it('streams n sequences from one prompt, with usage once at the end', async () => {
    const out = await collect(
      engine.generate({ prompt, sampling: { n: 3, temperature: 1, seed: 5, maxTokens: 8, ignoreEos: true } }),
    );
    expect(out.tokens.map((t) => t.length)).toEqual([8, 8, 8]);
    expect(new Set(out.tokens.map((t) => t.join(','))).size).toBeGreaterThan(1);
    const usages = out.chunks.filter((c) => c.usage);
    expect(usages).toHaveLength(1);
    expect(usages[0].usage?.completionTokens).toBe(24);
    expect(out.chunks.at(-1)?.usage).toBeDefined();
  });

  it('returns logprobs whose top entry is the greedy choice', async () => {
    const out = await collect(
      engine.generate({ prompt, sampling: { temperature: 0, maxTokens: 5, logprobs: 3, ignoreEos: true } }),
    );
    const lps = out.chunks.flatMap((c) => c.logprobs ?? []);
    expect(lps).toHaveLength(5);
    for (const lp of lps) {
      expect(lp.logprob).toBeLessThanOrEqual(0);
      expect(lp.top).toHaveLength(3);
      expect(lp.top?.[0].tokenId).toBe(lp.tokenId);
      expect(lp.top?.[0].logprob).toBeCloseTo(lp.logprob, 5);
    }
  });

  it('rejects bad requests with clear errors and keeps serving', async () => {
    const gen = (request: Parameters<FerrumEngine['generate']>[0]) => () => engine.generate(request);
    expect(gen({ prompt: { tokenIds: [] } })).toThrow(/non-empty/);
    expect(gen({ prompt: { tokenIds: [1, 99999] } })).toThrow(/outside \[0, 512\)/);
    expect(gen({ prompt: { tokenIds: [1] }, sampling: { temperature: -1 } })).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
    expect(gen({ prompt: { tokenIds: [1] }, sampling: { maxTokens: 5000 } })).toThrow(
      expect.objectContaining({ code: 'context_length_exceeded' }),
    );
    const ok = await collect(
      engine.generate({
        prompt: { tokenIds: [1, 2] },
        sampling: { temperature: 0, maxTokens: 2, ignoreEos: true },
      }),
    );
    expect(ok.tokens[0]).toHaveLength(2);
  });
});

describe('custom logits processors through DI', () => {
  it('runs a third-party processor on the rows it applies to only', async () => {
    const onlySeven: LogitsProcessor = {
      specificationVersion: 'v1',
      name: 'only-seven',
      appliesTo: (context) => context.params.logitBias?.[0] === -0.5,
      process: (logits) => {
        logits.fill(Number.NEGATIVE_INFINITY);
        logits[7] = 0;
      },
    };
    const engine = await createEngine({ model, maxKvTokens: 4096 }, { logitsProcessors: [onlySeven] });
    const sampling = { temperature: 0.8, seed: 3, maxTokens: 6, ignoreEos: true };
    const [marked, plain] = await Promise.all([
      collect(engine.generate({ prompt, sampling: { ...sampling, logitBias: { 0: -0.5 } } })),
      collect(engine.generate({ prompt, sampling })),
    ]);
    expect(marked.tokens[0]).toEqual([7, 7, 7, 7, 7, 7]);
    expect(plain.tokens[0].some((t) => t !== 7)).toBe(true);
    await engine.shutdown();
  });
});
