import type { LogitsContext, LogitsProcessor } from '@ferrum/interfaces';
import { isFerrumError } from '@ferrum/types';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSampler } from '../src/index.js';
import { isClose, logSoftmax, randomLogits, referenceDistribution, referenceProcess } from './reference.js';
import { makeRow, type RowSpec, stackRows } from './rows.js';

const NINF = Number.NEGATIVE_INFINITY;

function sampleOne(logits: Float32Array, spec: RowSpec, sampler = createSampler()) {
  const out = sampler.sample(logits.slice(), logits.length, [makeRow(spec)]);
  return { token: out.tokenIds[0], logprob: out.logprobs[0], top: out.topLogprobs[0] };
}

describe('greedy', () => {
  it('temperature 0 returns the argmax of the processed logits, ties to the lowest id', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { minLength: 1, maxLength: 50 }), (values) => {
        const logits = Float32Array.from(values);
        const best = values.indexOf(Math.max(...values));
        expect(sampleOne(logits, { params: { temperature: 0 }, seed: values.length }).token).toBe(best);
      }),
      { numRuns: 300, seed: 20_251_121 },
    );
  });

  it('sees bias, penalties and masks, which can change the argmax', () => {
    const logits = Float32Array.from([1, 5, 4.5, 0]);
    expect(sampleOne(logits, { params: { temperature: 0 } }).token).toBe(1);
    expect(sampleOne(logits, { params: { temperature: 0, repetitionPenalty: 1.2 }, prompt: [1] }).token).toBe(
      2,
    );
    expect(sampleOne(logits, { params: { temperature: 0, bannedTokenIds: [1, 2] } }).token).toBe(0);
    expect(sampleOne(logits, { params: { temperature: 0, logitBias: { 3: 6 } } }).token).toBe(3);
    expect(sampleOne(logits, { params: { temperature: 0, allowedTokenIds: [0, 3] } }).token).toBe(0);
  });
});

describe('min tokens', () => {
  const logits = Float32Array.from([0, 1, 2, 9]); // 3 = EOS, most likely by far
  it('masks EOS and stop ids until minTokens outputs exist', () => {
    const params = { temperature: 0, minTokens: 2, stopTokenIds: [2] };
    expect(sampleOne(logits, { params, eos: [3], output: [0] }).token).toBe(1);
    expect(sampleOne(logits, { params, eos: [3], output: [0, 0] }).token).toBe(3);
  });
  it('never draws EOS before minTokens when sampling either', () => {
    const sampler = createSampler();
    for (let seed = 0; seed < 200; seed++) {
      expect(
        sampleOne(logits, { params: { minTokens: 5 }, eos: [3], output: [1], seed }, sampler).token,
      ).not.toBe(3);
    }
  });
});

describe('counted outputs (numOutputTokens)', () => {
  const logits = randomLogits(64, 11);
  it.each([
    ['a seeded draw', { temperature: 0.9 }, false],
    ['a pending minTokens mask', { temperature: 0.9, minTokens: 4 }, false],
    ['a presence penalty', { temperature: 0, presencePenalty: 2 }, true],
  ])('samples %s from the count, reading the outputs only for penalties', (_name, params, reads) => {
    const output = [logits.indexOf(Math.max(...logits)), 5, 7];
    const spec = { params, output, eos: [1], seed: 9 };
    const expected = sampleOne(logits, spec).token;
    const row = makeRow(spec);
    let numReads = 0;
    const counted = {
      seed: row.seed,
      context: {
        ...row.context,
        numOutputTokens: output.length,
        get outputTokenIds() {
          numReads++;
          return Int32Array.from(output);
        },
      },
    };
    const sampled = createSampler().sample(logits.slice(), logits.length, [counted]);
    expect(sampled.tokenIds[0]).toBe(expected);
    expect(numReads > 0).toBe(reads);
  });
});

describe('seeded determinism', () => {
  it('a row draws the same token whatever it is batched with and wherever it sits', () => {
    const vocab = 1000;
    const target = randomLogits(vocab, 3, 2);
    const spec: RowSpec = {
      params: { temperature: 0.9, topP: 0.95, topK: 200, presencePenalty: 0.5, logprobs: 3 },
      output: [1, 2, 3],
      seed: 777,
    };
    const alone = sampleOne(target, spec);
    fc.assert(
      fc.property(fc.nat(6), fc.nat(6), fc.nat(1000), (before, after, salt) => {
        const others = (n: number, offset: number) =>
          Array.from({ length: n }, (_, i) => ({
            logits: randomLogits(vocab, salt * 31 + offset + i, 3),
            spec: { params: { temperature: 1.2, minP: 0.01 }, seed: salt + i, output: [i] } as RowSpec,
          }));
        const batch = [...others(before, 0), { logits: target, spec }, ...others(after, 100)];
        const out = createSampler().sample(
          stackRows(batch.map((b) => b.logits)),
          vocab,
          batch.map((b) => makeRow(b.spec)),
        );
        expect(out.tokenIds[before]).toBe(alone.token);
        expect(out.logprobs[before]).toBe(alone.logprob);
        expect(out.topLogprobs[before]).toEqual(alone.top);
      }),
      { numRuns: 40, seed: 20_251_121 },
    );
  });

  it('different seeds or steps give different draws', () => {
    const logits = randomLogits(5000, 5, 0.5);
    const tokens = new Set<number>();
    for (let seed = 0; seed < 50; seed++) tokens.add(sampleOne(logits, { seed }).token);
    expect(tokens.size).toBeGreaterThan(40);
  });
});

// Log-probabilities come back at float32 precision (SamplerOutput.logprobs is a Float32Array, and top
// entries are rounded the same way), so they match the float64 references to ~1e-7 relative.
describe('logprobs', () => {
  const vocab = 300;
  const logits = randomLogits(vocab, 9, 3);
  const spec: RowSpec = {
    params: {
      temperature: 0.7,
      topK: 40,
      topP: 0.9,
      repetitionPenalty: 1.5,
      logitBias: { 7: 3 },
      logprobs: 5,
    },
    prompt: [10, 20, 30],
    output: [7, 11],
    seed: 4,
  };

  it("'raw' is the log-softmax of the model's logits before any processing", () => {
    const got = sampleOne(logits, { ...spec, params: { ...spec.params, logprobsMode: 'raw' } });
    const reference = logSoftmax(Array.from(logits));
    expect(isClose(got.logprob, reference[got.token], 1e-6)).toBe(true);
    const expectedTop = reference
      .map((lp, id) => ({ id, lp }))
      .sort((a, b) => b.lp - a.lp)
      .slice(0, 5);
    expect(got.top?.map((e) => e.tokenId)).toEqual(expectedTop.map((e) => e.id));
    for (const [k, e] of (got.top ?? []).entries())
      expect(isClose(e.logprob, expectedTop[k].lp, 1e-6)).toBe(true);
  });

  it("'processed' is the distribution after the chain, temperature and truncation", () => {
    const got = sampleOne(logits, { ...spec, params: { ...spec.params, logprobsMode: 'processed' } });
    const params = makeRow(spec).context.params;
    const processed = referenceProcess(logits, params, {
      promptTokenIds: [10, 20, 30],
      outputTokenIds: [7, 11],
      eosTokenIds: [],
    });
    const reference = referenceDistribution(processed, params);
    expect(reference.probs[got.token]).toBeGreaterThan(0);
    expect(isClose(got.logprob, reference.logprobs[got.token], 1e-6)).toBe(true);
    const expectedTop = reference.logprobs
      .map((lp, id) => ({ id, lp }))
      .filter((e) => reference.probs[e.id] > 0)
      .sort((a, b) => b.lp - a.lp || a.id - b.id)
      .slice(0, 5);
    expect(got.top?.map((e) => e.tokenId)).toEqual(expectedTop.map((e) => e.id));
    for (const [k, e] of (got.top ?? []).entries())
      expect(isClose(e.logprob, expectedTop[k].lp, 1e-6)).toBe(true);
  });

  it("greedy 'processed' is the log-softmax after the chain, without truncation; zero-probability tokens are not listed", () => {
    const small = Float32Array.from([2, 1, 0.5, -1]);
    const got = sampleOne(small, {
      params: { temperature: 0, logprobs: 4, logprobsMode: 'processed', bannedTokenIds: [1], topK: 1 },
    });
    const reference = logSoftmax([2, NINF, 0.5, -1]);
    expect(got.token).toBe(0);
    expect(isClose(got.logprob, reference[0], 1e-6)).toBe(true);
    expect(got.top?.map((e) => e.tokenId)).toEqual([0, 2, 3]);
    for (const e of got.top ?? []) expect(isClose(e.logprob, reference[e.tokenId], 1e-6)).toBe(true);
  });

  it('is NaN / null when not asked, and an empty list for logprobs 0', () => {
    expect(sampleOne(logits, {}).logprob).toBeNaN();
    expect(sampleOne(logits, {}).top).toBeNull();
    const chosenOnly = sampleOne(logits, { params: { logprobs: 0 } });
    expect(chosenOnly.top).toEqual([]);
    expect(Number.isFinite(chosenOnly.logprob)).toBe(true);
  });
});

describe('custom logits processors', () => {
  const forceToken = (id: number, appliesTo: (c: LogitsContext) => boolean) => {
    const calls: string[] = [];
    const processor: LogitsProcessor = {
      specificationVersion: 'v1',
      name: `force-${id}`,
      appliesTo,
      process(logits, context) {
        calls.push(context.requestId);
        logits.fill(NINF);
        logits[id] = 0;
      },
    };
    return { processor, calls };
  };

  it('run only on rows they apply to, before sampling', () => {
    const { processor, calls } = forceToken(3, (c) => c.requestId === 'constrained');
    const sampler = createSampler({ processors: [processor] });
    const logits = stackRows([randomLogits(10, 1), randomLogits(10, 2)]);
    const rows = [
      makeRow({ requestId: 'free', params: { temperature: 0 }, seed: 1 }),
      makeRow({ requestId: 'constrained', seed: 2 }),
    ];
    const out = sampler.sample(logits, 10, rows);
    expect(out.tokenIds[1]).toBe(3);
    expect(out.tokenIds[0]).toBe(Array.from(randomLogits(10, 1)).indexOf(Math.max(...randomLogits(10, 1))));
    expect(calls).toEqual(['constrained']);
  });

  it('are rejected when they implement another specification version', () => {
    const bad = {
      ...forceToken(0, () => true).processor,
      specificationVersion: 'v2',
    } as unknown as LogitsProcessor;
    expect(() => createSampler({ processors: [bad] })).toThrow(/specification v2/);
  });
});

describe('errors', () => {
  it('rejects +Infinity logits on both paths and never draws NaN entries', () => {
    const logits = Float32Array.from([0, Number.POSITIVE_INFINITY, 1]);
    expect(() => sampleOne(logits, { params: { temperature: 0 } })).toThrow(/\+Infinity/);
    expect(() => sampleOne(logits, {})).toThrow(/\+Infinity/);
    const withNaN = Float32Array.from([Number.NaN, 0, Number.NaN, 0]);
    for (let seed = 0; seed < 50; seed++) expect([1, 3]).toContain(sampleOne(withNaN, { seed }).token);
    expect(sampleOne(withNaN, { params: { temperature: 0 } }).token).toBe(1);
  });
  it('rejects a logits buffer too short for the rows', () => {
    expect(() => createSampler().sample(new Float32Array(10), 6, [makeRow(), makeRow()])).toThrow(
      /need 12 logits, got 10/,
    );
  });
  it('names the request when a row leaves nothing to sample', () => {
    let caught: unknown;
    try {
      createSampler().sample(Float32Array.from([1, 2]), 2, [
        makeRow({ requestId: 'abc', params: { allowedTokenIds: [0], bannedTokenIds: [0] } }),
      ]);
    } catch (error) {
      caught = error;
    }
    expect(isFerrumError(caught) && caught.code === 'invalid_argument').toBe(true);
    expect((caught as Error).message).toMatch(/request abc: every token is masked/);
  });
});
