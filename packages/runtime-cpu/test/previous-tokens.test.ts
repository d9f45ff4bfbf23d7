import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, type Golden, greedyRow, range, readGolden } from '@ferrum/models/testing';
import {
  type ForwardBatch,
  type ForwardResult,
  type RowSampling,
  resolveSamplingParams,
} from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { loadNativeAddon } from '../src/native-addon.js';
import { expectInvalid } from './expect-invalid.js';
import { allTinyModels } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const model = allTinyModels()[0];
/** KV slots of prompt p start at p * SLOTS_PER_PROMPT. */
const SLOTS_PER_PROMPT = 64;

describe.skipIf(!addon.ok || model === undefined)('ForwardBatch.previousTokens on the CPU runtime', () => {
  let golden: Golden;
  let executor: ModelExecutor;
  beforeAll(async () => {
    golden = await readGolden(model!.dir);
    executor = await loadTinyModel(model!.dir, golden.config);
  });
  afterAll(() => executor?.dispose());

  const prompts = () => golden.prompts.slice(0, 3);

  /** Prefill of every prompt, each sampling its last row greedily on the runtime. */
  function prefill(): ForwardBatch {
    const steps = prompts().map((tokens, p) => ({
      tokens,
      kvSlots: range(p * SLOTS_PER_PROMPT, tokens.length),
      sample: 'last' as const,
    }));
    return buildBatch(steps, greedyRow);
  }

  /**
   * Decode step `k` (0 = the first token after the prompt) of the prompts in `order`, with `token(p)` as each
   * row's input; row b belongs to prompt order[b].
   */
  function decode(order: readonly number[], k: number, token: (p: number) => number): ForwardBatch {
    const steps = order.map((p) => {
      const length = prompts()[p].length + k + 1;
      return { tokens: [token(p)], kvSlots: range(p * SLOTS_PER_PROMPT, length), sample: 'last' as const };
    });
    return buildBatch(steps, greedyRow);
  }

  it('rows take the tokens the previous forward sampled, in call order, without awaiting', async () => {
    const order = [2, 0, 1];
    // Sample index of prompt p in a step whose rows follow `rows`.
    const indexIn = (rows: readonly number[], p: number) => rows.indexOf(p);
    // Every row's placeholder is a wrong but valid id: the runtime must ignore it.
    const wrong = () => 1;
    const first = executor.forward(prefill());
    const second = executor.forward({
      ...decode(order, 0, wrong),
      previousTokens: {
        rows: Int32Array.from(order.keys()),
        sampleIndices: Int32Array.from(order.map((p) => indexIn([0, 1, 2], p))),
      },
    });
    const third = executor.forward({
      ...decode([0, 1, 2], 1, wrong),
      previousTokens: {
        rows: Int32Array.of(0, 1, 2),
        sampleIndices: Int32Array.from([0, 1, 2].map((p) => indexIn(order, p))),
      },
    });
    const [a, b, c] = await Promise.all([first, second, third]);
    // transformers' greedy continuations are the reference.
    const expected = (k: number, rows: readonly number[]) => rows.map((p) => golden.greedy[p][k]);
    expect(Array.from(a.tokens)).toEqual(expected(0, [0, 1, 2]));
    expect(Array.from(b.tokens)).toEqual(expected(1, order));
    expect(Array.from(c.tokens)).toEqual(expected(2, [0, 1, 2]));
  });

  it('gives what the same steps give with the tokens filled in on the host', async () => {
    const early: ForwardResult[] = [];
    const pending = [executor.forward(prefill())];
    pending.push(
      executor.forward({
        ...decode([0, 1, 2], 0, () => 0),
        previousTokens: { rows: Int32Array.of(0, 1, 2), sampleIndices: Int32Array.of(0, 1, 2) },
      }),
    );
    early.push(...(await Promise.all(pending)));
    const first = await executor.forward(prefill());
    const second = await executor.forward(decode([0, 1, 2], 0, (p) => first.tokens[p]));
    expect(early[0]).toEqual(first);
    expect(early[1]).toEqual(second);
  });

  it('reads row sampling when called, so the caller may change it while the step waits', async () => {
    const row = { ...greedyRow() } as { -readonly [K in keyof RowSampling]: RowSampling[K] };
    const first = executor.forward(prefill());
    const batch = { ...decode([0], 0, () => 0), sampling: [row] };
    const second = executor.forward({
      ...batch,
      previousTokens: { rows: Int32Array.of(0), sampleIndices: Int32Array.of(0) },
    });
    row.params = resolveSamplingParams({ temperature: 0.8 });
    await first;
    const result = await second;
    expect(result.tokens[0]).toBe(golden.greedy[0][1]);
    expect(result.logits).toBeUndefined();
  });

  describe('refuses references it cannot serve, and keeps working', () => {
    const refer = (sampleIndices: number[], rows = sampleIndices.map((_, i) => i)) => ({
      rows: Int32Array.from(rows),
      sampleIndices: Int32Array.from(sampleIndices),
    });

    it('a sample index past the previous forward, or a first forward', async () => {
      const fresh = await loadTinyModel(model!.dir, golden.config);
      await expectInvalid(
        fresh.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0]) }),
        /outside the previous forward's 0 samples/,
      );
      await fresh.dispose();
      await executor.forward(prefill());
      await expectInvalid(
        executor.forward({ ...decode([0, 1], 0, () => 0), previousTokens: refer([0, 3]) }),
        /sampleIndices\[1\] = 3 is outside the previous forward's 3 samples/,
      );
      await expectInvalid(
        executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([-1]) }),
        /sampleIndices\[0\] = -1/,
      );
    });

    it('a row outside the batch, or lengths that disagree', async () => {
      await executor.forward(prefill());
      await expectInvalid(
        executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0], [1]) }),
        /rows\[0\] = 1 is outside the batch's 1 rows/,
      );
      await executor.forward(prefill());
      await expectInvalid(
        executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0, 1], [0]) }),
        /1 rows but 2 sample indices/,
      );
    });

    it('a row the previous forward left to the host', async () => {
      const hostRow: RowSampling = { ...greedyRow(), params: resolveSamplingParams({ temperature: 0.8 }) };
      const batch = prefill();
      await executor.forward({ ...batch, sampling: [greedyRow(), hostRow, greedyRow()] });
      await expectInvalid(
        executor.forward({ ...decode([0, 1], 0, () => 0), previousTokens: refer([0, 1]) }),
        /sampleIndices\[1\] = 1: the previous forward left that row to the host/,
      );
    });

    it('a previous forward that failed, when called or when it ran', async () => {
      const good = prefill();
      await executor.forward(good);
      // Refused when called (one sampling entry too few), so there is nothing to refer to.
      await expectInvalid(executor.forward({ ...good, sampling: [greedyRow()] }), /batch.sampling has 1/);
      await expectInvalid(
        executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0]) }),
        /outside the previous forward's 0 samples/,
      );
      // Refused by the addon when it ran (a KV slot outside the pool): queued behind it, the next one fails.
      const failing = executor.forward({ ...good, kvIndices: good.kvIndices.map(() => 100_000) });
      const next = executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0]) });
      await expectInvalid(failing, /kvIndices/);
      await expectInvalid(next, /the previous forward failed/);
      // Nothing is left broken: the plain pair runs.
      const first = await executor.forward(prefill());
      const second = await executor.forward({ ...decode([0], 0, () => 0), previousTokens: refer([0]) });
      expect(first.tokens[0]).toBe(golden.greedy[0][0]);
      expect(second.tokens[0]).toBe(golden.greedy[0][1]);
    });
  });

  it('the backend reports the capability', async () => {
    expect((await createCpuBackend().probe()).previousTokens).toBe(true);
  });
});
