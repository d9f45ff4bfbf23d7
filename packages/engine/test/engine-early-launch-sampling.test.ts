import type { LogitsProcessor } from '@ferrum/interfaces';
import type { SamplingParams } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collected } from './collect.js';
import { createDeviceSamplingBackend } from './device-sampling-backend.js';
import {
  comparable,
  createRig,
  expectCleanEnd,
  type Rig,
  runAll,
  type TestRequest,
} from './early-launch-rig.js';
import { readGolden } from './fixture-models.js';

// Early launch on a runtime that samples every built-in row itself (the stand-in for the CUDA runtime in
// device-sampling-backend.ts): seeded draws depend on the number of outputs a row's record shows when the
// runtime reads it, and some sampling reads the outputs themselves, whose last one is unknown then. The
// reference is the CPU runtime with the engine's host sampler and no async scheduling.
const golden = readGolden('qwen3-qknorm');
const greedy = { temperature: 0, ignoreEos: true } satisfies Partial<SamplingParams>;

/** Token ids 1, 3, 5, ... below 200 never come out of requests whose id starts with "proc". */
const banOddIds: LogitsProcessor = {
  specificationVersion: 'v1',
  name: 'ban-odd-ids',
  appliesTo: (context) => context.requestId.startsWith('proc'),
  process(logits) {
    for (let id = 1; id < 200; id += 2) logits[id] = Number.NEGATIVE_INFINITY;
  },
};

describe('early launch with device sampling', () => {
  let early: Rig;
  let counting: Rig;
  let late: Rig;
  let reference: Rig;
  beforeAll(async () => {
    const logitsProcessors = [banOddIds];
    early = await createRig('early', { inner: createDeviceSamplingBackend(), logitsProcessors });
    counting = await createRig('early', {
      inner: createDeviceSamplingBackend({ previousTokenPenalties: true }),
      logitsProcessors,
    });
    late = await createRig('late', { inner: createDeviceSamplingBackend(), logitsProcessors });
    reference = await createRig('plain', { logitsProcessors });
  });
  afterAll(async () => {
    for (const rig of [early, counting, late, reference]) await rig.engine.shutdown();
  });

  /**
   * Run `requests` on the three engines: early and late stream the same, the reference the same tokens,
   * text and ends (logprobs within float error: its greedy rows are the runtime's). Returns how many
   * forwards the early engine launched while another ran.
   */
  async function compare(requests: readonly TestRequest[], rig = early): Promise<number> {
    const before = rig.spy.overlap.early;
    const [a, b, c] = await Promise.all([rig, late, reference].map((r) => runAll(r.engine, requests)));
    expect(a.map(comparable)).toEqual(b.map(comparable));
    const text = (out: Collected) => ({ tokens: out.tokens, texts: out.texts, ends: out.finishReasons });
    expect(a.map(text)).toEqual(c.map(text));
    const logprobs = (outs: Collected[]) => outs.flatMap((o) => o.chunks.flatMap((k) => k.logprobs ?? []));
    const [la, lc] = [logprobs(a), logprobs(c)];
    expect(la.map((l) => l.tokenId)).toEqual(lc.map((l) => l.tokenId));
    for (const [i, l] of la.entries()) expect(l.logprob).toBeCloseTo(lc[i].logprob, 4);
    expectCleanEnd(rig, a);
    expectCleanEnd(late, b);
    expect(late.spy.overlap.early).toBe(0);
    return rig.spy.overlap.early - before;
  }

  it('seeded sampling, n > 1 and logprobs draw the same tokens when launched early', async () => {
    const requests: TestRequest[] = [
      {
        prompt: { tokenIds: golden.prompts[0] },
        sampling: { temperature: 0.9, seed: 3, maxTokens: 16, ignoreEos: true },
      },
      { prompt: { text: 'a fox' }, sampling: { temperature: 0.7, topP: 0.9, seed: 8, maxTokens: 16 } },
      {
        prompt: { tokenIds: golden.prompts[1] },
        sampling: { temperature: 1.1, topK: 20, seed: 11, maxTokens: 12, ignoreEos: true, logprobs: 0 },
      },
      { prompt: { text: 'Once upon a time' }, sampling: { n: 3, temperature: 1, seed: 5, maxTokens: 10 } },
      {
        prompt: { tokenIds: golden.prompts[2] },
        sampling: {
          temperature: 0.8,
          minP: 0.1,
          seed: 6,
          maxTokens: 14,
          logprobs: 0,
          logprobsMode: 'processed',
        },
      },
      { prompt: { tokenIds: golden.prompts[3] }, sampling: { ...greedy, maxTokens: 10, logprobs: 0 } },
      // Static logit edits read no outputs: still launched early.
      {
        prompt: { text: 'The cat' },
        sampling: { temperature: 1, seed: 21, maxTokens: 12, logitBias: { 5: 3 }, bannedTokenIds: [6] },
      },
      {
        prompt: { tokenIds: golden.prompts[2] },
        sampling: {
          temperature: 0.9,
          seed: 9,
          maxTokens: 16,
          allowedTokenIds: Array.from({ length: 60 }, (_, i) => i + 3),
        },
      },
    ];
    const numEarly = await compare(requests);
    expect(numEarly).toBeGreaterThan(0);
    // Alone, a seeded request launches each of its 15 decodes early (planned while the step before runs).
    expect(await compare([requests[0]])).toBe(15);
    // An allowed-ids list is as static: each of that request's 15 decodes too.
    expect(await compare([requests[7]])).toBe(15);
  });

  it.each<[string, Partial<SamplingParams>]>([
    ['a repetition penalty', { ...greedy, repetitionPenalty: 1.5 }],
    ['a presence penalty', { temperature: 0.8, seed: 4, presencePenalty: 1.5 }],
    ['a frequency penalty', { ...greedy, frequencyPenalty: 1 }],
  ])('steps whose placeholder rows use %s are launched after the tokens are known', async (_, sampling) => {
    // The fixture's greedy continuation of this prompt repeats one token: penalties change it at once.
    const request = { prompt: { tokenIds: golden.prompts[2] }, sampling: { ...sampling, maxTokens: 16 } };
    expect(await compare([request])).toBe(0);
  });

  it.each<[string, Partial<SamplingParams>]>([
    ['a repetition penalty', { ...greedy, repetitionPenalty: 1.5 }],
    ['a presence penalty', { temperature: 0.8, seed: 4, presencePenalty: 1.5 }],
    ['a frequency penalty', { ...greedy, frequencyPenalty: 1 }],
    [
      'all three and a bias',
      { ...greedy, repetitionPenalty: 1.2, presencePenalty: 0.5, frequencyPenalty: 0.5, logitBias: { 9: 2 } },
    ],
  ])(
    'on a runtime that counts the placeholder in the penalties, steps with %s launch early and sample the same',
    async (_, sampling) => {
      const request = { prompt: { tokenIds: golden.prompts[2] }, sampling: { ...sampling, maxTokens: 16 } };
      expect(await compare([request], counting)).toBe(15);
    },
  );

  it('top logprobs found on the runtime: every decode of such a request goes early, and its alternatives match', async () => {
    const request: TestRequest = {
      prompt: { tokenIds: golden.prompts[0] },
      sampling: { temperature: 0.8, seed: 7, maxTokens: 8, ignoreEos: true, logprobs: 3 },
    };
    expect(await compare([request])).toBe(7);
    const [a, c] = await Promise.all([early, reference].map((rig) => runAll(rig.engine, [request])));
    const tops = (outs: Collected[]) =>
      outs[0].chunks.flatMap((k) => k.logprobs ?? []).map((l) => l.top ?? []);
    const [ta, tc] = [tops(a), tops(c)];
    expect(ta.map((top) => top.length)).toEqual(Array(8).fill(3));
    expect(ta.map((top) => top.map((e) => e.tokenId))).toEqual(tc.map((top) => top.map((e) => e.tokenId)));
    for (const [i, top] of ta.entries()) {
      for (const [j, e] of top.entries()) expect(e.logprob).toBeCloseTo(tc[i][j].logprob, 4);
    }
  });

  it('min tokens: early launch only once the count, placeholder included, reaches it', async () => {
    // Greedy, this prompt continues with one token only: a stop id once the mask lifts.
    const stop = golden.greedy[1][0];
    const sampling = { ...greedy, minTokens: 8, maxTokens: 12, stopTokenIds: [stop] };
    const numEarly = await compare([{ prompt: { tokenIds: golden.prompts[1] }, sampling }]);
    expect(numEarly).toBeGreaterThan(0);
    expect(numEarly).toBeLessThanOrEqual(12 - 8);
  });

  it('rows a custom processor samples on the host are never launched early; other steps still are', async () => {
    const seeded: TestRequest = {
      prompt: { tokenIds: golden.prompts[1] },
      sampling: { temperature: 0.9, seed: 2, maxTokens: 16, ignoreEos: true },
    };
    const proc = (id: string): TestRequest => ({
      id,
      prompt: { tokenIds: golden.prompts[0] },
      sampling: { ...greedy, maxTokens: 6 },
    });
    // Together from the start, and joining while the other request's steps run (its prompt's step is then
    // planned while one runs, and has a host-logit row: the runtime would refuse it early).
    const numEarly = await compare([proc('proc-1'), seeded]);
    expect(numEarly).toBeGreaterThan(0);
    const before = early.spy.overlap.early;
    const [joined, expected] = await Promise.all(
      [early, reference].map((rig, i) => staggered(rig, seeded, proc(`proc-join-${i}`))),
    );
    expect(joined.map((out) => out.tokens)).toEqual(expected.map((out) => out.tokens));
    expect(early.spy.overlap.early).toBeGreaterThan(before);
    expectCleanEnd(early, joined);
    for (const out of [joined[1], expected[1]]) {
      expect(out.tokens[0].filter((id) => id < 200 && id % 2 === 1)).toEqual([]);
    }
  });
});

/** Run `first`, and `second` once `first` streamed its first chunk (so it is planned while a step runs). */
async function staggered(rig: Rig, first: TestRequest, second: TestRequest): Promise<Collected[]> {
  let started: Promise<Collected[]> | undefined;
  const [a] = await runAll(rig.engine, [first], () => {
    started ??= runAll(rig.engine, [second]);
  });
  return [a, ...(await started!)];
}
