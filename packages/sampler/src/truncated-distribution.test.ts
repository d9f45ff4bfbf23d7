import { resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isClose, randomLogits, referenceDistribution, supportOf } from '../test/reference.js';
import { TruncatedDistribution } from './truncated-distribution.js';

const NINF = Number.NEGATIVE_INFINITY;

const paramsArbitrary = fc.record({
  temperature: fc.oneof(fc.constant(1), fc.double({ min: 0.05, max: 3, noNaN: true })),
  topK: fc.oneof(fc.constantFrom(-1, 0), fc.integer({ min: 1, max: 70 })),
  topP: fc.oneof(fc.constant(1), fc.double({ min: 0.01, max: 1, noNaN: true })),
  minP: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
});

const logitArbitrary = fc.oneof(
  fc.integer({ min: -4, max: 4 }), // ties
  fc.double({ min: -20, max: 20, noNaN: true }),
  fc.constant(NINF),
);

function keptIds(distribution: TruncatedDistribution): number[] {
  return Array.from(distribution.ids.subarray(0, distribution.count));
}

/** Reference inverse CDF: first id (ascending) whose cumulative probability exceeds u. */
function referenceDraw(probs: number[], u: number): { id: number; gap: number } {
  let cumulative = 0;
  let gap = Number.POSITIVE_INFINITY;
  let chosen = -1;
  probs.forEach((q, i) => {
    if (q === 0) return;
    cumulative += q;
    gap = Math.min(gap, Math.abs(cumulative - u));
    if (chosen < 0 && cumulative > u) chosen = i;
  });
  return { id: chosen, gap };
}

describe('TruncatedDistribution', () => {
  it('keeps exactly the reference support, log-probabilities and inverse-CDF draw (heap or histogram paths)', () => {
    fc.assert(
      fc.property(
        fc.array(logitArbitrary, { minLength: 1, maxLength: 80 }),
        paramsArbitrary,
        fc.constantFrom(1, 2, 7, 4096),
        fc.constantFrom(0, 1024),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (values, partial, numBuckets, maxHeapTopK, u) => {
          fc.pre(values.some((v) => v > NINF));
          const row = Float32Array.from(values);
          const params = resolveSamplingParams(partial);
          const reference = referenceDistribution(Array.from(row), params);
          fc.pre(reference.margin > 1e-9);
          const distribution = new TruncatedDistribution({ numBuckets, maxHeapTopK });
          distribution.build(row, params);
          expect(keptIds(distribution)).toEqual(supportOf(reference.probs));
          for (const id of keptIds(distribution)) {
            expect(isClose(distribution.logprobOf(row[id]), reference.logprobs[id], 1e-9)).toBe(true);
          }
          const draw = referenceDraw(reference.probs, u);
          fc.pre(draw.gap > 1e-9);
          expect(distribution.draw(u)).toBe(draw.id);
        },
      ),
      { numRuns: 2000, seed: 20_251_121 },
    );
  });

  it('keeps the reference support on 151,936-wide rows, smooth and tie-heavy', () => {
    const vocabSize = 151_936;
    const smooth = randomLogits(vocabSize, 7, 4);
    const ties = smooth.map((v) => Math.round(v * 4) / 4);
    const settings: Partial<SamplingParams>[] = [
      { temperature: 0.7, topK: 50, topP: 0.9 },
      { temperature: 1, topP: 0.95 },
      { temperature: 1.3, topK: 20_000, topP: 0.5 },
      { temperature: 0.8, minP: 0.05 },
      { temperature: 1, topK: 1000 },
      { temperature: 1, topK: 5000, minP: 0.001 },
      { temperature: 0.5, topK: 40, topP: 0.8, minP: 0.1 },
    ];
    const distribution = new TruncatedDistribution();
    for (const row of [smooth, ties]) {
      for (const partial of settings) {
        const params = resolveSamplingParams(partial);
        const reference = referenceDistribution(Array.from(row), params);
        expect(reference.margin).toBeGreaterThan(1e-9);
        distribution.build(row, params);
        expect(keptIds(distribution)).toEqual(supportOf(reference.probs));
      }
    }
  });

  it('keeps every token when top-p is so close to 1 that rounding leaves the bucket sums short', () => {
    // Found by the property above: the mass of the tail buckets summed in bucket order fell below topP × total.
    const params = resolveSamplingParams({
      temperature: 0.3687421153817225,
      topK: 4,
      topP: 0.9999999999999998,
    });
    const distribution = new TruncatedDistribution({ maxHeapTopK: 0 });
    distribution.build(Float32Array.from([1, 0, 0, 0]), params);
    expect(keptIds(distribution)).toEqual([0, 1, 2, 3]);
  });

  it('throws invalid_argument when every token is masked', () => {
    const row = Float32Array.from([NINF, NINF]);
    expect(() => new TruncatedDistribution().build(row, resolveSamplingParams({}))).toThrow(
      /every token is masked/,
    );
  });
});
