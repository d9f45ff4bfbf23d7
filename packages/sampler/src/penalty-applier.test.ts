import { isFerrumError, resolveSamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { PenaltyApplier } from './penalty-applier.js';

const ids = (...values: number[]) => Int32Array.from(values);

describe('PenaltyApplier', () => {
  it('applies repetition (HF), frequency and presence (OpenAI) penalties as hand-computed', () => {
    const row = Float32Array.from([2, -2, 3, -1, 0.5, 4]);
    const params = resolveSamplingParams({
      repetitionPenalty: 2,
      frequencyPenalty: 0.5,
      presencePenalty: 0.25,
    });
    // prompt: 0, 1, 1; output: 1, 3, 3, 3, 4. Token 2 and 5 unseen.
    new PenaltyApplier().apply(row, params, ids(0, 1, 1), ids(1, 3, 3, 3, 4));
    expect(Array.from(row)).toEqual([
      2 / 2, // prompt only: positive divided
      -2 * 2 - 0.5 * 1 - 0.25, // prompt + once in output
      3, // unseen
      -1 * 2 - 0.5 * 3 - 0.25, // three times in output
      0.5 / 2 - 0.5 - 0.25, // once in output
      4, // unseen
    ]);
  });

  it('leaves prompt tokens alone without a repetition penalty and resets its scratch between calls', () => {
    const applier = new PenaltyApplier();
    const params = resolveSamplingParams({ frequencyPenalty: 1 });
    const first = Float32Array.from([1, 1, 1, 1]);
    applier.apply(first, params, ids(0, 1), ids(2, 2));
    expect(Array.from(first)).toEqual([1, 1, -1, 1]);
    const second = Float32Array.from([1, 1, 1, 1]);
    applier.apply(second, params, ids(), ids(3));
    expect(Array.from(second)).toEqual([1, 1, 1, 0]);
  });

  it('is a no-op with neutral parameters and keeps -Infinity masked', () => {
    const row = Float32Array.from([1, Number.NEGATIVE_INFINITY]);
    new PenaltyApplier().apply(row, resolveSamplingParams({}), ids(0, 1), ids(1));
    expect(Array.from(row)).toEqual([1, Number.NEGATIVE_INFINITY]);
    new PenaltyApplier().apply(
      row,
      resolveSamplingParams({ repetitionPenalty: 1.5, presencePenalty: 1 }),
      ids(1),
      ids(1),
    );
    expect(row[1]).toBe(Number.NEGATIVE_INFINITY);
  });

  it('rejects out-of-range ids with invalid_argument and stays clean afterwards', () => {
    const applier = new PenaltyApplier();
    const params = resolveSamplingParams({ repetitionPenalty: 2, presencePenalty: 1 });
    let caught: unknown;
    try {
      applier.apply(new Float32Array(3), params, ids(0, 1), ids(2, 7));
    } catch (error) {
      caught = error;
    }
    expect(isFerrumError(caught) && caught.code === 'invalid_argument').toBe(true);
    expect(() => applier.apply(new Float32Array(3), params, ids(-1), ids())).toThrow(/outside \[0, 3\)/);
    const row = Float32Array.from([4, 4, 4]);
    applier.apply(row, params, ids(), ids(2));
    expect(Array.from(row)).toEqual([4, 4, 1]);
  });
});
