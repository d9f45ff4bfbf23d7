import { buildBatch, range } from '@ferrum/models/testing';
import type { ModelConfig } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { loadNativeAddon } from '../src/native-addon.js';

// Attention runs a sequence's new tokens in query blocks of up to 16, and in smaller blocks where the sequence is
// longer than its scratch holds whole blocks of (~8,192 entries past the pool's size / 16). A token's logits must not
// depend on the block it landed in: the same prompt prefilled at once and in two chunks gives the same logits, bit
// for bit.
const addon = loadNativeAddon();

const config: ModelConfig = {
  architecture: 'llama',
  vocabSize: 64,
  hiddenSize: 32,
  intermediateSize: 64,
  numLayers: 1,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 8,
  rmsNormEps: 1e-6,
  rope: { type: 'default', theta: 10_000 },
  attentionBias: false,
  qkNorm: false,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 16_384,
  bosTokenId: null,
  eosTokenIds: [2],
  dtype: 'f32',
};

const LENGTH = 9000;

describe.skipIf(!addon.ok)(`query blocks${addon.ok ? '' : ` (skipped: ${addon.reason})`}`, () => {
  it('gives a long prompt the same logits whether its tokens attend in blocks of 15 or of 16', async () => {
    const executor = await createCpuBackend({ numThreads: 2 }).loadModel({
      modelDir: '/nonexistent',
      config,
      loadFormat: 'dummy',
      seed: 9,
      maxBatchTokens: LENGTH,
      maxBatchSeqs: 1,
      maxKvTokens: LENGTH + 100,
    });
    try {
      const prompt = Array.from({ length: LENGTH }, (_, i) => (i * 31 + 7) % config.vocabSize);
      const slots = range(0, LENGTH);
      const whole = await executor.forward(buildBatch([{ tokens: prompt, kvSlots: slots, sample: 'all' }]));
      // The first chunk (4,501 entries) attends in blocks of 16, the second (9,000) in blocks of 15 that start one
      // token later than the whole prompt's.
      const split = 4501;
      const first = await executor.forward(
        buildBatch([{ tokens: prompt.slice(0, split), kvSlots: slots.slice(0, split), sample: 'all' }]),
      );
      const second = await executor.forward(
        buildBatch([{ tokens: prompt.slice(split), kvSlots: slots, sample: 'all' }]),
      );
      const vocab = config.vocabSize;
      const rowOf = (logits: Float32Array | undefined, row: number) =>
        Array.from((logits as Float32Array).subarray(row * vocab, (row + 1) * vocab));
      for (const row of [0, 14, 15, 16, 100, split - 1]) {
        expect(rowOf(whole.logits, row), `row ${row}`).toEqual(rowOf(first.logits, row));
      }
      for (const row of [split, split + 14, split + 15, LENGTH - 1]) {
        expect(rowOf(whole.logits, row), `row ${row}`).toEqual(rowOf(second.logits, row - split));
      }
    } finally {
      await executor.dispose();
    }
  }, 60_000);
});
