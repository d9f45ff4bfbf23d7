import type { LogitsContext } from '@ferrum/interfaces';
import { resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import {
  applyAllowedTokenIds,
  applyBannedTokenIds,
  applyLogitBias,
  applyMinTokens,
} from './apply-token-masks.js';

const NINF = Number.NEGATIVE_INFINITY;

function context(params: Partial<SamplingParams>, numOutput: number, eos?: number[]): LogitsContext {
  return {
    requestId: 'r',
    params: resolveSamplingParams(params),
    promptTokenIds: new Int32Array(0),
    outputTokenIds: new Int32Array(numOutput),
    eosTokenIds: eos,
  };
}

describe('token masks and bias', () => {
  it('keeps only allowed ids, bans banned ids, adds the bias', () => {
    const row = Float32Array.from([1, 2, 3, 4, 5]);
    applyAllowedTokenIds(row, [3, 1, 3], new Float32Array(3));
    expect(Array.from(row)).toEqual([NINF, 2, NINF, 4, NINF]);
    applyBannedTokenIds(row, [1]);
    expect(Array.from(row)).toEqual([NINF, NINF, NINF, 4, NINF]);
    const biased = Float32Array.from([1, 2, 3]);
    applyLogitBias(biased, { 0: 0.5, 2: -3 });
    expect(Array.from(biased)).toEqual([1.5, 2, 0]);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => applyBannedTokenIds(new Float32Array(3), [3])).toThrow(
      /bannedTokenIds: token id 3 is outside/,
    );
    expect(() => applyLogitBias(new Float32Array(3), { 5: 1 })).toThrow(/logitBias/);
    expect(() => applyAllowedTokenIds(new Float32Array(3), [-1], new Float32Array(1))).toThrow(
      /allowedTokenIds/,
    );
  });

  it('masks EOS and stop ids until minTokens, and EOS not at all under ignoreEos', () => {
    const params = { minTokens: 3, stopTokenIds: [1] };
    const early = Float32Array.from([0, 0, 0, 0]);
    applyMinTokens(early, context(params, 2, [3]));
    expect(Array.from(early)).toEqual([0, NINF, 0, NINF]);
    const reached = Float32Array.from([0, 0, 0, 0]);
    applyMinTokens(reached, context(params, 3, [3]));
    expect(Array.from(reached)).toEqual([0, 0, 0, 0]);
    const ignoring = Float32Array.from([0, 0, 0, 0]);
    applyMinTokens(ignoring, context({ ...params, ignoreEos: true }, 0, [3]));
    expect(Array.from(ignoring)).toEqual([0, NINF, 0, 0]);
  });
});
