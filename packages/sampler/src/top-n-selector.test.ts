import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TopNSelector } from './top-n-selector.js';

describe('TopNSelector', () => {
  it('matches a full sort (value desc, id asc), skipping -Infinity and NaN, over rows and id lists', () => {
    const value = fc.oneof(
      fc.integer({ min: -3, max: 3 }),
      fc.constantFrom(Number.NEGATIVE_INFINITY, Number.NaN),
      fc.float({ noNaN: true, min: -10, max: 10 }),
    );
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 60 }),
        fc.nat(25),
        fc.boolean(),
        (values, n, useIds) => {
          const row = Float32Array.from(values);
          const ids = useIds ? Int32Array.from(values.flatMap((_, i) => (i % 2 === 0 ? [i] : []))) : null;
          const candidates = ids === null ? values.map((_, i) => i) : Array.from(ids);
          const expected = candidates
            .filter((i) => row[i] > Number.NEGATIVE_INFINITY)
            .sort((a, b) => row[b] - row[a] || a - b)
            .slice(0, n);
          const selector = new TopNSelector(4);
          selector.select(row, n, ids, candidates.length);
          const got = Array.from({ length: selector.count }, (_, k) => [
            selector.idAt(k),
            selector.valueAt(k),
          ]);
          expect(got).toEqual(expected.map((i) => [i, row[i]]));
        },
      ),
      { numRuns: 500, seed: 20_251_121 },
    );
  });
});
