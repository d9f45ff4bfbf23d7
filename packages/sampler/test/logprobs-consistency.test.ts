import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSampler } from '../src/index.js';
import { makeRow, type RowSpec, stackRows } from './rows.js';

const NINF = Number.NEGATIVE_INFINITY;

/** Logits with ties (small integers), smooth values and masked entries, at least one finite. */
const rowArbitrary = fc
  .array(
    fc.oneof(
      fc.integer({ min: -4, max: 4 }),
      fc.double({ min: -30, max: 30, noNaN: true }),
      fc.constant(NINF),
    ),
    { minLength: 1, maxLength: 60 },
  )
  .filter((values) => values.some((v) => v > NINF));

const specArbitrary: fc.Arbitrary<RowSpec> = fc.record({
  params: fc.record({
    temperature: fc.oneof(fc.constant(0), fc.double({ min: 0.05, max: 3, noNaN: true })),
    topK: fc.oneof(fc.constantFrom(0, 1), fc.integer({ min: 1, max: 70 })),
    topP: fc.oneof(fc.constant(1), fc.double({ min: 0.01, max: 1, noNaN: true })),
    minP: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
    presencePenalty: fc.oneof(fc.constant(0), fc.double({ min: -2, max: 2, noNaN: true })),
    logprobs: fc.integer({ min: 0, max: 20 }),
    logprobsMode: fc.constantFrom('raw' as const, 'processed' as const),
  }),
  output: fc.array(fc.nat(59), { maxLength: 5 }),
  seed: fc.nat(),
});

describe('the chosen token and its top_logprobs entry', () => {
  it('carry exactly the same log-probability whenever the chosen token is listed', () => {
    let listed = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(rowArbitrary, specArbitrary), { minLength: 1, maxLength: 4 }), (rows) => {
        const vocabSize = Math.max(...rows.map(([values]) => values.length));
        // Pad rows to one width with masked entries; ids the output names stay in range.
        const logits = rows.map(([values]) =>
          Float32Array.from({ length: vocabSize }, (_, i) => values[i] ?? NINF),
        );
        const specs = rows.map(([, spec]) => ({
          ...spec,
          output: spec.output?.filter((id) => id < vocabSize),
        }));
        const out = createSampler().sample(stackRows(logits), vocabSize, specs.map(makeRow));
        for (let r = 0; r < rows.length; r++) {
          const entry = out.topLogprobs[r]?.find((e) => e.tokenId === out.tokenIds[r]);
          if (entry === undefined) continue;
          listed++;
          expect(Object.is(entry.logprob, out.logprobs[r])).toBe(true);
        }
      }),
      { numRuns: 1500, seed: 20_260_301 },
    );
    // The property must not hold vacuously.
    expect(listed).toBeGreaterThan(1000);
  });
});
