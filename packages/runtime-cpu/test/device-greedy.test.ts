import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildBatch, range, readGolden } from '@ferrum/models/testing';
import { type RowSampling, resolveSamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';
import { allTinyModels } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const model = allTinyModels()[0];

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

  it('never picks a NaN logit, as the host sampler does not', async () => {
    const golden = await readGolden(model!.dir);
    const { vocabSize: vocab, tieWordEmbeddings } = golden.config;
    // A copy of the checkpoint whose output row for token 0 is NaN (bf16 0x7fc0), so logit 0 is NaN.
    const dir = mkdtempSync(path.join(tmpdir(), 'ferrum-nan-'));
    try {
      cpSync(model!.dir, dir, { recursive: true });
      const file = path.join(dir, 'model.safetensors');
      const bytes = readFileSync(file);
      const headerBytes = Number(bytes.readBigUInt64LE(0));
      const header = JSON.parse(bytes.subarray(8, 8 + headerBytes).toString('utf8'));
      const head = header[tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'];
      expect(head.dtype).toBe('BF16');
      const start = 8 + headerBytes + head.data_offsets[0];
      for (let i = 0; i < head.shape[1]; i++) bytes.writeUInt16LE(0x7fc0, start + 2 * i);
      writeFileSync(file, bytes);
      const executor = await loadTinyModel(dir, golden.config);
      const steps = [
        { tokens: golden.prompts[1], kvSlots: range(0, golden.prompts[1].length), sample: 'last' as const },
      ];
      const plain = await executor.forward(buildBatch(steps));
      const greedy = await executor.forward({ ...buildBatch(steps), sampling: [sampling(0)] });
      await executor.dispose();
      const logits = plain.logits!.subarray(0, vocab);
      expect(logits[0]).toBeNaN();
      let best = 1;
      for (let i = 2; i < vocab; i++) if (logits[i] > logits[best]) best = i;
      let sum = 0;
      for (let i = 1; i < vocab; i++) sum += Math.exp(logits[i] - logits[best]);
      expect(greedy.tokens[0]).toBe(best);
      expect(greedy.logprobs![0]).toBeCloseTo(-Math.log(sum), 5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
