import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, greedyRow, range } from '@ferrum/models/testing';
import type { ModelConfig } from '@ferrum/types';
import { afterEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { loadNativeAddon } from '../src/native-addon.js';

const addon = loadNativeAddon();

const config: ModelConfig = {
  architecture: 'qwen3',
  vocabSize: 300,
  hiddenSize: 48,
  intermediateSize: 96,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  rmsNormEps: 1e-6,
  rope: { type: 'default', theta: 10_000 },
  attentionBias: true,
  qkNorm: true,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 128,
  bosTokenId: null,
  eosTokenIds: [2],
  dtype: 'bf16',
};

describe.skipIf(!addon.ok)('dummy weights', () => {
  const loaded: ModelExecutor[] = [];
  afterEach(async () => {
    await Promise.all(loaded.splice(0).map((executor) => executor.dispose()));
  });

  async function logitsOf(options: { seed: number; numThreads: number; dtype?: 'bf16' | 'f16' | 'f32' }) {
    const executor = await createCpuBackend().loadModel({
      modelDir: '/nonexistent',
      config,
      loadFormat: 'dummy',
      dtype: options.dtype,
      seed: options.seed,
      numThreads: options.numThreads,
      maxBatchTokens: 16,
      maxBatchSeqs: 2,
      maxKvTokens: 80,
    });
    loaded.push(executor);
    const prompt = [1, 17, 250, 3, 99];
    const prefill = await executor.forward(
      buildBatch([{ tokens: prompt, kvSlots: range(0, 5), sample: 'all' }]),
    );
    // A single-token step too: with more threads than KV heads, attention splits per query head.
    const decode = await executor.forward(
      buildBatch([{ tokens: [42], kvSlots: range(0, 6), sample: 'last' }]),
    );
    const logits = new Float32Array(prefill.logits!.length + decode.logits!.length);
    logits.set(prefill.logits!);
    logits.set(decode.logits!, prefill.logits!.length);
    return { executor, logits };
  }

  it('loads without files, with the requested dtype, and runs', async () => {
    const { executor, logits } = await logitsOf({ seed: 1, numThreads: 2 });
    expect(executor.info.weightDtype).toBe('bf16');
    expect(executor.info.backend).toBe('cpu');
    expect(logits.length).toBe(6 * config.vocabSize);
    expect(logits.every(Number.isFinite)).toBe(true);
    expect(logits.some((value) => value !== 0)).toBe(true);
  });

  it('is a pure function of the seed, whatever the thread count', async () => {
    const one = await logitsOf({ seed: 7, numThreads: 1 });
    const two = await logitsOf({ seed: 7, numThreads: 2 });
    const five = await logitsOf({ seed: 7, numThreads: 5 });
    const other = await logitsOf({ seed: 8, numThreads: 2 });
    expect(two.logits).toEqual(one.logits);
    expect(five.logits).toEqual(one.logits);
    expect(other.logits).not.toEqual(one.logits);
  });

  it('stays exact over many steps with more threads than CPUs (pool handoffs under oversubscription)', async () => {
    const decodeAll = async (numThreads: number) => {
      const { executor } = await logitsOf({ seed: 3, numThreads });
      const out: number[] = [];
      let token = 5;
      for (let step = 0; step < 60; step++) {
        const slots = range(0, 7 + step);
        const result = await executor.forward(
          buildBatch([{ tokens: [token], kvSlots: slots, sample: 'last' }], greedyRow),
        );
        token = result.tokens[0];
        out.push(token, result.logprobs![0]);
      }
      return out;
    };
    expect(await decodeAll(7)).toEqual(await decodeAll(1));
  });

  it.each(['f32', 'f16'] as const)('fills %s weights too', async (dtype) => {
    const { executor, logits } = await logitsOf({ seed: 1, numThreads: 2, dtype });
    expect(executor.info.weightDtype).toBe(dtype);
    expect(logits.every(Number.isFinite)).toBe(true);
  });
});
