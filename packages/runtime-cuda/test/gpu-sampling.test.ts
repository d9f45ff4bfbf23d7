import type { ModelExecutor, SamplerRow } from '@ferrum/interfaces';
import { buildBatch, type Golden, range, readGolden, type SeqStep } from '@ferrum/models/testing';
import { createSampler } from '@ferrum/sampler';
import {
  DEFAULT_SAMPLING_PARAMS,
  MAX_DEVICE_TOP_LOGPROBS,
  type RowSampling,
  type SamplingParams,
} from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const model = tinyModels().find((m) => m.label.endsWith('llama3-gqa-tied'));

/** Parameter sets covering every op of the device chain. */
const CASES: Record<string, Partial<SamplingParams>> = {
  greedy: { temperature: 0 },
  temperature: { temperature: 0.7 },
  hot: { temperature: 1.5 },
  topK: { temperature: 1, topK: 5 },
  topP: { temperature: 0.9, topP: 0.8 },
  minP: { temperature: 1.2, minP: 0.05 },
  combined: { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.02 },
  repetition: { temperature: 0.9, repetitionPenalty: 1.8 },
  presenceFrequency: { temperature: 0.9, presencePenalty: 1.5, frequencyPenalty: 0.7 },
  greedyPenalized: { temperature: 0, repetitionPenalty: 2, frequencyPenalty: 1 },
  bias: { temperature: 1, logitBias: { 17: 6, 40: -100 } },
  banned: { temperature: 0, bannedTokenIds: [0, 1, 2, 3, 4, 5] },
  allowed: { temperature: 1, allowedTokenIds: [9, 33, 101, 250, 499] },
  minTokens: { temperature: 1, minTokens: 5, stopTokenIds: [7], logitBias: { 2: 50, 4: 50 } },
  processedLogprobs: { temperature: 0.8, topK: 20, logprobsMode: 'processed' },
  // A bias of 1e9 rounds both logits to the same f32: top-k 1 must take the lower id, as the host does.
  tiedTopK1: { temperature: 1, topK: 1, logitBias: { 10: 1e9, 20: 1e9 } },
  // The same with processed logprobs (the device's sampling branch): the lower id alone, of probability 1.
  tiedTopK1Processed: { temperature: 1, topK: 1, logitBias: { 10: 1e9, 20: 1e9 }, logprobsMode: 'processed' },
};

/** Rows that ask for alternatives, in each logprob mode and through each branch of the device chain. */
const TOP_CASES: Record<string, Partial<SamplingParams>> = {
  rawGreedy: { temperature: 0, logprobs: 5 },
  rawSampled: { temperature: 0.8, topK: 40, logprobs: 20 },
  // Raw alternatives come from the logits before the mask and penalties.
  rawAllowedPenalized: {
    temperature: 0.9,
    allowedTokenIds: [9, 33, 101],
    repetitionPenalty: 1.5,
    logprobs: 4,
  },
  processedGreedy: {
    temperature: 0,
    repetitionPenalty: 1.8,
    logitBias: { 3: 5 },
    logprobs: 3,
    logprobsMode: 'processed',
  },
  processedSampled: { temperature: 0.7, topK: 30, topP: 0.9, logprobs: 20, logprobsMode: 'processed' },
  // Five tokens have a probability: the list ends after them.
  processedAllowed: {
    temperature: 1,
    allowedTokenIds: [9, 33, 101, 250, 499],
    logprobs: 10,
    logprobsMode: 'processed',
  },
  // Top-k 1 keeps the first of two tied maxima alone: a list of one.
  processedTiedTopK1: {
    temperature: 1,
    topK: 1,
    logitBias: { 10: 1e9, 20: 1e9 },
    logprobs: 3,
    logprobsMode: 'processed',
  },
  // 300 tokens tied at the top (a bias of 1e9 rounds every logit to the same f32): more than the kernel's candidate
  // list holds, so it takes the exact search, and the 12 lowest ids of the tie.
  processedTies: {
    temperature: 0,
    logitBias: Object.fromEntries(Array.from({ length: 300 }, (_, k) => [100 + k, 1e9])),
    logprobs: 12,
    logprobsMode: 'processed',
  },
};

describe.skipIf(!available || !model)(
  `cuda: device sampling equals @ferrum/sampler${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    let golden: Golden;
    let executor: ModelExecutor;
    let steps: SeqStep[];
    beforeAll(async () => {
      golden = await readGolden(model!.dir);
      executor = await loadCuda(model!.dir, golden.config);
      steps = golden.prompts.map((prompt, p) => ({
        tokens: prompt,
        kvSlots: range(p * 100, prompt.length),
        sample: 'last',
      }));
    });
    afterAll(() => executor?.dispose());

    /** Seed `seed`'s rows of `partial`, sampled on the device and by @ferrum/sampler from the same logits. */
    async function sampleBoth(partial: Partial<SamplingParams>, seed: number, logits: Float32Array) {
      const rows = steps.map((step, i) => rowFor(partial, seed * 7919 + i, step.tokens, seed % 6));
      const device = await executor.forward(buildBatch(steps, (i) => rows[i]));
      const host = createSampler().sample(
        Float32Array.from(logits),
        golden.config.vocabSize,
        rows.map(toSamplerRow(golden.config.eosTokenIds)),
      );
      return { rows, device, host };
    }

    it.each(Object.entries(CASES))('%s', async (_name, partial) => {
      const { logits } = await executor.forward(buildBatch(steps));
      let agree = 0;
      let total = 0;
      for (let seed = 0; seed < 16; seed++) {
        const { rows, device, host } = await sampleBoth(partial, seed, logits!);
        for (let r = 0; r < rows.length; r++) {
          total++;
          if (device.tokens[r] === host.tokenIds[r]) {
            agree++;
            expect(device.logprobs![r], `seed ${seed} row ${r}`).toBeCloseTo(host.logprobs[r], 2);
          }
        }
      }
      // Float rounding may move a draw across a boundary on rare rows; anything systematic shows here.
      const deterministic = partial.temperature === 0 || partial.topK === 1;
      expect(agree / total).toBeGreaterThanOrEqual(deterministic ? 1 : 0.95);
    });

    it.each(Object.entries(TOP_CASES))(
      'lists the top logprobs @ferrum/sampler lists: %s',
      async (_name, partial) => {
        const { logits } = await executor.forward(buildBatch(steps));
        for (let seed = 0; seed < 4; seed++) {
          const { rows, device, host } = await sampleBoth(partial, seed, logits!);
          const found = device.topLogprobs!;
          for (let r = 0; r < rows.length; r++) {
            const expected = host.topLogprobs[r]!;
            const width = MAX_DEVICE_TOP_LOGPROBS;
            const ids = Array.from(found.tokenIds.subarray(r * width, r * width + partial.logprobs!));
            const listed = ids.indexOf(-1) < 0 ? ids.length : ids.indexOf(-1);
            expect(ids.slice(0, listed), `seed ${seed} row ${r}`).toEqual(expected.map((e) => e.tokenId));
            expected.forEach((e, k) => {
              expect(found.logprobs[r * width + k], `seed ${seed} row ${r} entry ${k}`).toBeCloseTo(
                e.logprob,
                3,
              );
            });
          }
        }
      },
    );

    it('returns no alternatives when no row asks for them', async () => {
      const rows = steps.map((step, i) => rowFor({ temperature: 0 }, i, step.tokens, 0));
      const result = await executor.forward(buildBatch(steps, (i) => rows[i]));
      expect(result.topLogprobs).toBeUndefined();
    });

    it('returns host logits for rows that ask for them and samples the others', async () => {
      const rows = steps.map((step, i) => ({
        ...rowFor({ temperature: 0 }, i, step.tokens, 0),
        needsHostLogits: i % 2 === 0,
      }));
      const plain = await executor.forward(buildBatch(steps));
      const mixed = await executor.forward(buildBatch(steps, (i) => rows[i]));
      const vocab = golden.config.vocabSize;
      const hostRows = rows.flatMap((row, i) => (row.needsHostLogits ? [i] : []));
      expect(Array.from(mixed.logitsRows!)).toEqual(hostRows);
      hostRows.forEach((row, k) => {
        expect(mixed.logits!.subarray(k * vocab, (k + 1) * vocab)).toEqual(
          plain.logits!.subarray(row * vocab, (row + 1) * vocab),
        );
        expect(mixed.tokens[row]).toBe(-1);
      });
    });
  },
);

function rowFor(
  partial: Partial<SamplingParams>,
  seed: number,
  prompt: readonly number[],
  numOutput: number,
): RowSampling {
  const params: SamplingParams = { ...DEFAULT_SAMPLING_PARAMS, logprobs: 0, ...partial };
  return {
    requestId: `r${seed}`,
    params,
    seed,
    promptTokenIds: Int32Array.from(prompt),
    outputTokenIds: Int32Array.from(prompt.slice(0, numOutput).concat(prompt.slice(0, numOutput))),
    needsHostLogits: false,
  };
}

function toSamplerRow(eosTokenIds: readonly number[]) {
  return (row: RowSampling): SamplerRow => ({
    context: {
      requestId: row.requestId,
      params: row.params,
      promptTokenIds: row.promptTokenIds,
      outputTokenIds: row.outputTokenIds,
      eosTokenIds,
    },
    seed: row.seed,
  });
}
