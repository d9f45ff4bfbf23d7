import { type RowSampling, resolveSamplingParams, type SamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { fillRowModes, isDeviceGreedy, ROW_GREEDY, ROW_HOST_LOGITS } from './row-modes.js';

function row(params: Partial<SamplingParams>, extra: Partial<RowSampling> = {}): RowSampling {
  return {
    requestId: 'r',
    params: resolveSamplingParams(params),
    seed: 1,
    outputTokenIds: new Int32Array(0),
    promptTokenIds: new Int32Array(0),
    needsHostLogits: false,
    ...extra,
  };
}

describe('isDeviceGreedy', () => {
  it('accepts plain greedy (temperature 0 or top-k 1)', () => {
    expect(isDeviceGreedy(row({ temperature: 0 }))).toBe(true);
    expect(isDeviceGreedy(row({ topK: 1 }))).toBe(true);
    expect(isDeviceGreedy(row({ temperature: 0, logprobs: 0 }))).toBe(true);
    expect(isDeviceGreedy(row({ temperature: 0, logprobs: 0, logprobsMode: 'processed' }))).toBe(true);
    expect(isDeviceGreedy(row({ temperature: 0.7, topK: 1, logprobs: 0 }))).toBe(true);
  });

  it.each<[string, RowSampling]>([
    ['random sampling', row({ temperature: 0.7 })],
    ['custom processors', row({ temperature: 0 }, { needsHostLogits: true })],
    ['a repetition penalty', row({ temperature: 0, repetitionPenalty: 1.1 })],
    ['a presence penalty', row({ temperature: 0, presencePenalty: 0.5 })],
    ['a frequency penalty', row({ temperature: 0, frequencyPenalty: 0.5 })],
    ['a logit bias', row({ temperature: 0, logitBias: { 5: 10 } })],
    ['allowed ids', row({ temperature: 0, allowedTokenIds: [1, 2] })],
    ['banned ids', row({ temperature: 0, bannedTokenIds: [1] })],
    ['a pending minTokens mask', row({ temperature: 0, minTokens: 3 }, { outputTokenIds: Int32Array.of(9) })],
    ['top logprobs', row({ temperature: 0, logprobs: 5 })],
    // Top-k 1 at a temperature: the processed distribution holds one token, so its logprob is 0, while the
    // runtime reports the raw log-softmax.
    [
      'processed logprobs of top-k 1',
      row({ temperature: 0.7, topK: 1, logprobs: 0, logprobsMode: 'processed' }),
    ],
  ])('leaves rows with %s to the host', (_name, sampling) => {
    expect(isDeviceGreedy(sampling)).toBe(false);
  });

  it('samples on device once minTokens is reached', () => {
    expect(isDeviceGreedy(row({ temperature: 0, minTokens: 1 }, { outputTokenIds: Int32Array.of(9) }))).toBe(
      true,
    );
  });

  it('counts outputs by numOutputTokens when the producer sets it', () => {
    const counted = (numOutputTokens: number) =>
      row({ temperature: 0, minTokens: 2 }, { outputTokenIds: Int32Array.of(9, 9), numOutputTokens });
    expect(isDeviceGreedy(counted(1))).toBe(false);
    expect(isDeviceGreedy(counted(2))).toBe(true);
  });
});

describe('fillRowModes', () => {
  it("asks for every row's logits without sampling instructions", () => {
    const modes = new Int32Array(4).fill(-1);
    expect(fillRowModes(undefined, 3, modes)).toBe(3);
    expect(Array.from(modes)).toEqual([ROW_HOST_LOGITS, ROW_HOST_LOGITS, ROW_HOST_LOGITS, -1]);
  });

  it('splits greedy rows from host rows', () => {
    const modes = new Int32Array(2);
    expect(fillRowModes([row({ temperature: 0 }), row({ temperature: 1 })], 2, modes)).toBe(1);
    expect(Array.from(modes)).toEqual([ROW_GREEDY, ROW_HOST_LOGITS]);
  });

  it('rejects sampling of the wrong length', () => {
    expect(() => fillRowModes([row({})], 2, new Int32Array(2))).toThrow(/one per sampled row/);
  });
});
