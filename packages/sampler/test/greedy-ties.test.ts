import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSampler } from '../src/index.js';
import { logSoftmax } from './reference.js';
import { makeRow, type RowSpec } from './rows.js';

const NINF = Number.NEGATIVE_INFINITY;

function sampleOne(logits: readonly number[], spec: RowSpec) {
  const row = Float32Array.from(logits);
  const out = createSampler().sample(row, row.length, [makeRow(spec)]);
  return { token: out.tokenIds[0], logprob: out.logprobs[0], top: out.topLogprobs[0] };
}

/** The first index holding the largest value: the tie rule of every runtime's argmax. */
function firstMaxIndex(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}

// Integer logits tie often; -Infinity entries are masked tokens.
const tiedRow = fc
  .array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constant(NINF)), { minLength: 1, maxLength: 40 })
  .filter((values) => values.some((v) => v > NINF));

describe('greedy ties go to the lowest token id (as the CPU runtime and the CUDA greedy kernel pick)', () => {
  it.each([
    ['1, 3, 3, 0, 3', [1, 3, 3, 0, 3], 1],
    ['5, 5', [5, 5], 0],
    ['-inf, 2, 2', [NINF, 2, 2], 1],
    ['-0, +0', [-0, 0], 0],
    ['+0, -0', [0, -0], 0],
  ])('temperature 0 on [%s] picks %i, whatever the seed', (_label, logits, expected) => {
    for (let seed = 0; seed < 50; seed++) {
      expect(sampleOne(logits, { params: { temperature: 0 }, seed }).token).toBe(expected);
    }
  });

  it.each([0.2, 1, 5])(
    'top-k 1 at temperature %d picks the lowest id among tied maxima, whatever the seed',
    (t) => {
      for (let seed = 0; seed < 50; seed++) {
        expect(sampleOne([1, 3, 3, 0, 3], { params: { temperature: t, topK: 1 }, seed }).token).toBe(1);
        expect(sampleOne([0, -0], { params: { temperature: t, topK: 1 }, seed }).token).toBe(0);
      }
    },
  );

  it('top-k 1 and temperature 0 pick the first maximum for any row, seed, step and other truncation', () => {
    fc.assert(
      fc.property(
        tiedRow,
        fc.double({ min: 0.05, max: 4, noNaN: true }),
        fc.oneof(fc.constant(1), fc.double({ min: 0.01, max: 1, noNaN: true })),
        fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
        fc.nat(),
        fc.nat(20),
        (values, temperature, topP, minP, seed, step) => {
          const expected = firstMaxIndex(values);
          const output = Array.from({ length: step }, () => 0);
          const topK1 = { params: { temperature, topK: 1, topP, minP }, seed, output };
          expect(sampleOne(values, topK1).token).toBe(expected);
          expect(sampleOne(values, { params: { temperature: 0, topP, minP }, seed, output }).token).toBe(
            expected,
          );
        },
      ),
      { numRuns: 1000, seed: 20_260_302 },
    );
  });

  it('breaks ties made by processing (bias, penalties) the same way', () => {
    // Token 3 is biased up to tie with token 1; token 0 is penalized down from the top.
    const logits = [4, 3, 1, 2];
    const params = { logitBias: { 3: 1 }, repetitionPenalty: 2 };
    for (let seed = 0; seed < 20; seed++) {
      expect(sampleOne(logits, { params: { ...params, temperature: 0 }, prompt: [0], seed }).token).toBe(1);
      expect(sampleOne(logits, { params: { ...params, topK: 1 }, prompt: [0], seed }).token).toBe(1);
    }
  });

  it("top-k 1 keeps one token: 'processed' logprob 0 and a one-entry list, even with ties", () => {
    const got = sampleOne([1, 3, 3, 0], { params: { topK: 1, logprobs: 3, logprobsMode: 'processed' } });
    expect(got.token).toBe(1);
    expect(got.logprob).toBe(0);
    expect(got.top).toEqual([{ tokenId: 1, logprob: 0 }]);
  });

  it("top-k 1 'raw' logprobs are the log-softmax of the model's logits, ties listed by lower id", () => {
    const logits = [1, 3, 3, 0];
    const got = sampleOne(logits, {
      params: { topK: 1, temperature: 0.7, logprobs: 2, logprobsMode: 'raw' },
    });
    const reference = logSoftmax(logits);
    expect(got.token).toBe(1);
    expect(got.logprob).toBeCloseTo(reference[1], 6);
    expect(got.top?.map((e) => e.tokenId)).toEqual([1, 2]);
  });
});
