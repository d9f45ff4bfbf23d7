import { describe, expect, it } from 'vitest';
import { DEFAULT_SAMPLING_PARAMS, hasPenalties, isGreedy, resolveSamplingParams } from './sampling-params.js';

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
  it('finds penalties that read the outputs, and only those', () => {
    expect(hasPenalties(resolveSamplingParams({}))).toBe(false);
    expect(hasPenalties(resolveSamplingParams({ logitBias: { 3: 1 }, bannedTokenIds: [4] }))).toBe(false);
    expect(hasPenalties(resolveSamplingParams({ repetitionPenalty: 1.1 }))).toBe(true);
    expect(hasPenalties(resolveSamplingParams({ presencePenalty: -0.5 }))).toBe(true);
    expect(hasPenalties(resolveSamplingParams({ frequencyPenalty: 0.2 }))).toBe(true);
  });
});
