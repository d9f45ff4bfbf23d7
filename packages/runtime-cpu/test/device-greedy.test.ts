import { type RowSampling, resolveSamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';
import { buildBatch, range, readGolden, repoTinyModels, sharedTinyModels, tinyModelsIn } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const model = [...tinyModelsIn(repoTinyModels, 'repo'), ...tinyModelsIn(sharedTinyModels, 'shared')][0];

function sampling(temperature: number, needsHostLogits = false): RowSampling {
  return {
    requestId: 'r',
    params: resolveSamplingParams({ temperature }),
    seed: 0,
    outputTokenIds: new Int32Array(0),
    promptTokenIds: new Int32Array(0),
    needsHostLogits,
  };
}

describe.skipIf(!addon.ok || model === undefined)('device greedy sampling', () => {
  it('picks the argmax of the host logits, with its log-softmax, and returns logits only for other rows', async () => {
    const golden = await readGolden(model!.dir);
    const executor = await loadTinyModel(model!.dir, golden.config);
    const vocab = golden.config.vocabSize;
    const prompts = golden.prompts.slice(1, 4);
    const steps = prompts.map((tokens, p) => ({
      tokens,
      kvSlots: range(p * 64, tokens.length),
      sample: 'last' as const,
    }));
    const plain = await executor.forward(buildBatch(steps));
    const mixed = await executor.forward({
      ...buildBatch(steps),
      sampling: [sampling(0), sampling(0.8), sampling(0, true)],
    });
    for (let row = 0; row < prompts.length; row++) {
      const logits = plain.logits!.subarray(row * vocab, (row + 1) * vocab);
      const best = logits.indexOf(Math.max(...logits));
      const logSumExp =
        Math.log(logits.reduce((sum, value) => sum + Math.exp(value - logits[best]), 0)) + logits[best];
      if (row === 0) {
        expect(mixed.tokens[0]).toBe(best);
        expect(mixed.logprobs![0]).toBeCloseTo(logits[best] - logSumExp, 5);
      } else {
        expect(mixed.tokens[row]).toBe(-1);
      }
    }
    expect(Array.from(mixed.logitsRows!)).toEqual([1, 2]);
    expect(mixed.logits).toEqual(plain.logits!.slice(vocab));
    await executor.dispose();
  });
});
