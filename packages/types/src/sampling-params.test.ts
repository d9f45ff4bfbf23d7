import { describe, expect, it } from 'vitest';
import { DEFAULT_SAMPLING_PARAMS, isGreedy, resolveSamplingParams } from './sampling-params.js';

describe('resolveSamplingParams', () => {
  it('fills defaults and keeps given values, ignoring undefined', () => {
    const p = resolveSamplingParams({ temperature: 0, maxTokens: undefined, topK: 5 });
    expect(p.temperature).toBe(0);
    expect(p.topK).toBe(5);
    expect(p.maxTokens).toBe(DEFAULT_SAMPLING_PARAMS.maxTokens);
  });
  it('treats temperature 0 and top-k 1 as greedy', () => {
    expect(isGreedy(resolveSamplingParams({ temperature: 0 }))).toBe(true);
    expect(isGreedy(resolveSamplingParams({ topK: 1 }))).toBe(true);
    expect(isGreedy(resolveSamplingParams({}))).toBe(false);
  });
});
