import { isFerrumError, resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { validateSamplingParams } from './validate-sampling-params.js';

const limits = { vocabSize: 1000 };

function rejection(
  partial: Partial<SamplingParams>,
  options: { vocabSize: number; maxLogprobs?: number } = limits,
) {
  try {
    validateSamplingParams(resolveSamplingParams(partial), options);
  } catch (error) {
    if (isFerrumError(error)) return error;
    throw error;
  }
  return null;
}

describe('validateSamplingParams', () => {
  it('accepts the defaults and in-range values', () => {
    expect(rejection({})).toBeNull();
    expect(
      rejection({
        temperature: 0,
        topP: 1,
        topK: -1,
        minP: 1,
        repetitionPenalty: 1.3,
        presencePenalty: -2,
        frequencyPenalty: 2,
        logitBias: { 0: -100, 999: 100 },
        allowedTokenIds: [1, 2],
        bannedTokenIds: [2],
        stopTokenIds: [5],
        minTokens: 16,
        maxTokens: 16,
        seed: -7,
        logprobs: 20,
        logprobsMode: 'processed',
      }),
    ).toBeNull();
  });

  const cases: [string, Partial<SamplingParams>, string][] = [
    ['negative temperature', { temperature: -0.1 }, 'temperature must be finite and >= 0 (got -0.1)'],
    ['NaN temperature', { temperature: Number.NaN }, 'temperature'],
    ['topP 0', { topP: 0 }, 'topP must be in (0, 1] (got 0)'],
    ['topP above 1', { topP: 1.5 }, 'topP must be in (0, 1] (got 1.5)'],
    ['topK below -1', { topK: -2 }, 'topK must be an integer >= -1 (got -2)'],
    ['fractional topK', { topK: 2.5 }, 'topK'],
    ['minP above 1', { minP: 1.01 }, 'minP must be in [0, 1]'],
    ['minP negative', { minP: -0.1 }, 'minP'],
    ['zero repetition penalty', { repetitionPenalty: 0 }, 'repetitionPenalty must be finite and > 0'],
    ['presence penalty beyond 2', { presencePenalty: 2.5 }, 'presencePenalty must be in [-2, 2]'],
    ['frequency penalty beyond -2', { frequencyPenalty: -3 }, 'frequencyPenalty'],
    ['n of 0', { n: 0 }, 'n must be an integer >= 1 (got 0)'],
    ['maxTokens of 0', { maxTokens: 0 }, 'maxTokens must be an integer >= 1 (got 0)'],
    ['minTokens above maxTokens', { minTokens: 20, maxTokens: 10 }, 'minTokens must be <= maxTokens (10)'],
    ['logprobs above 20', { logprobs: 21 }, 'logprobs must be null or an integer in [0, 20] (got 21)'],
    ['negative logprobs', { logprobs: -1 }, 'logprobs'],
    ['bad logprobs mode', { logprobsMode: 'logits' as 'raw' }, 'logprobsMode'],
    ['fractional seed', { seed: 1.5 }, 'seed'],
    [
      'logit bias on an unknown id',
      { logitBias: { 1000: 1 } },
      'logitBias must be token ids in [0, 1000) (got 1000)',
    ],
    ['logit bias beyond 100', { logitBias: { 3: 101 } }, 'logitBias[3] must be a number in [-100, 100]'],
    ['logit bias on a negative id', { logitBias: { [-1]: 1 } }, 'logitBias must be token ids'],
    [
      'allowed id out of range',
      { allowedTokenIds: [1, 1000] },
      'allowedTokenIds must be token ids in [0, 1000)',
    ],
    ['empty allowed ids', { allowedTokenIds: [] }, 'allowedTokenIds must be non-empty'],
    ['banned id negative', { bannedTokenIds: [-1] }, 'bannedTokenIds must be token ids'],
    ['fractional stop id', { stopTokenIds: [1.5] }, 'stopTokenIds'],
    [
      'allowed all banned',
      { allowedTokenIds: [1, 2], bannedTokenIds: [2, 1] },
      'bannedTokenIds must be a set that leaves one of allowedTokenIds samplable',
    ],
    ['empty stop string', { stop: [''] }, 'stop must be an array of non-empty strings'],
  ];
  it.each(cases)('rejects %s with invalid_argument', (_name, partial, message) => {
    const error = rejection(partial);
    expect(error?.code).toBe('invalid_argument');
    expect(error?.message).toContain(message);
    expect(error?.details?.field).toBeDefined();
  });

  it('honours a custom logprobs limit and rejects a bad vocabulary size', () => {
    expect(rejection({ logprobs: 5 }, { vocabSize: 10, maxLogprobs: 4 })?.message).toContain('[0, 4]');
    expect(rejection({}, { vocabSize: 0 })?.message).toContain('vocabSize');
  });
});
