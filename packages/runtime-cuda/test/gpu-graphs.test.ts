// Decode CUDA graphs against the eager path (the reference): the same steps on two executors of one
// checkpoint, one with enforceEager, must sample the same tokens with the same log-probabilities.
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range, type SeqStep } from '@ferrum/models/testing';
import { DEFAULT_SAMPLING_PARAMS, type RowSampling, type SamplingParams, seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const models = tinyModels();

/** Per sequence: prompt length (the 300-token one makes the graphs' split-K attention cut long rows). */
const PROMPT_LENGTHS = [5, 300, 40];
const SLOT_BASE = [0, 1000, 2000];

describe.skipIf(!available || models.length === 0)(
  `cuda: decode graphs match eager steps${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(models.map((m) => [m.label, m.dir] as const))('%s', (_label, dir) => {
      let eager: CudaModelExecutor;
      let graphs: CudaModelExecutor;
      let vocab = 0;
      beforeAll(async () => {
        const config = await loadModelConfig(dir);
        vocab = config.vocabSize;
        eager = (await loadCuda(dir, config, { enforceEager: true })) as CudaModelExecutor;
        graphs = (await loadCuda(dir, config)) as CudaModelExecutor;
      });
      afterAll(async () => {
        await eager?.dispose();
        await graphs?.dispose();
      });

      it('samples identical tokens, padded to buckets, across bucket changes and the eager fallback', async () => {
        const random = seededRandom(12345);
        const next = () => Math.floor(random() * vocab);
        const seqs = PROMPT_LENGTHS.map((length, s) => ({
          tokens: Array.from({ length }, next),
          base: SLOT_BASE[s],
          seed: 77 + s,
        }));
        const rowFor = (
          s: number,
          extra: Partial<SamplingParams>,
          needsHostLogits: boolean,
        ): RowSampling => ({
          requestId: `seq${s}`,
          // Sequence 2 samples at temperature 0.7 (seeded draws), the others greedily.
          params: { ...DEFAULT_SAMPLING_PARAMS, temperature: s === 2 ? 0.7 : 0, logprobs: 0, ...extra },
          seed: seqs[s].seed,
          outputTokenIds: Int32Array.from(seqs[s].tokens.slice(PROMPT_LENGTHS[s])),
          promptTokenIds: Int32Array.from(seqs[s].tokens.slice(0, PROMPT_LENGTHS[s])),
          needsHostLogits,
        });
        const run = async (
          active: number[],
          decode: boolean,
          extra: Partial<SamplingParams> = {},
          hostLogitsRow = -1,
        ) => {
          const steps: SeqStep[] = active.map((s) => {
            const { tokens, base } = seqs[s];
            return {
              tokens: decode ? [tokens[tokens.length - 1]] : tokens,
              kvSlots: range(base, tokens.length),
              sample: 'last',
            };
          });
          const batch = buildBatch(steps, (row) => rowFor(active[row], extra, row === hostLogitsRow));
          const [a, b] = await Promise.all([eager.forward(batch), graphs.forward(batch)]);
          expect(Array.from(b.tokens)).toEqual(Array.from(a.tokens));
          for (let r = 0; r < a.tokens.length; r++) {
            if (r === hostLogitsRow) continue; // not sampled: its logits came back instead
            expect(Math.abs(b.logprobs![r] - a.logprobs![r]), `row ${r}`).toBeLessThanOrEqual(2e-2);
          }
          expect(b.topLogprobs === undefined).toBe(a.topLogprobs === undefined);
          if (a.topLogprobs && b.topLogprobs) {
            expect(Array.from(b.topLogprobs.tokenIds)).toEqual(Array.from(a.topLogprobs.tokenIds));
            a.topLogprobs.logprobs.forEach((lp, k) => {
              if (a.topLogprobs!.tokenIds[k] >= 0) {
                expect(Math.abs(b.topLogprobs!.logprobs[k] - lp)).toBeLessThanOrEqual(2e-2);
              }
            });
          }
          const picked = Array.from(a.tokens);
          if (hostLogitsRow >= 0) {
            expect(Array.from(b.logitsRows!)).toEqual([hostLogitsRow]);
            expect(Array.from(b.logits!)).toEqual(Array.from(a.logits!));
            // The host's pick for that row: the argmax of its logits.
            const logits = a.logits!;
            picked[hostLogitsRow] = logits.reduce((best, v, i) => (v > logits[best] ? i : best), 0);
          }
          for (const [r, s] of active.entries()) seqs[s].tokens.push(picked[r]);
        };

        await run([0, 1, 2], false); // prefill: eager on both
        for (let i = 0; i < 10; i++) await run([0, 1, 2], true); // bucket 4, one padded row
        for (let i = 0; i < 6; i++) await run([2, 1], true); // bucket 2
        // Sparse adjustments (penalties over the outputs so far, logit bias, bans) and allowed ids: sections whose
        // length changes from step to step, which the graphs' sampling finds through the upload's header.
        const penalties = { repetitionPenalty: 1.3, presencePenalty: 0.5, frequencyPenalty: 0.3 };
        for (let i = 0; i < 4; i++)
          await run([0, 1, 2], true, { ...penalties, logitBias: { 5: 4, 7: -100 } });
        await run([1, 2], true, { bannedTokenIds: [seqs[1].tokens.at(-1)!, 3] });
        await run([0, 2], true, { allowedTokenIds: [2, 9, 11, 17, 40, 41, 42].filter((id) => id < vocab) });
        // Top alternatives, raw and processed: found by the sampling kernel, so graph steps too.
        await run([0, 1, 2], true, { logprobs: 5 });
        await run([0, 1, 2], true, { logprobs: 3, logprobsMode: 'processed', ...penalties });
        await run([0, 1], true, {}, 1); // a row whose logits go to the host: eager fallback
        await run([0], true); // bucket 1

        expect(eager.memory().graphSteps).toBe(0);
        expect(graphs.memory().graphSteps).toBe(10 + 6 + 4 + 2 + 2 + 1);
        // Every bucket (1, 2, 4, 8, 16 for maxBatchSeqs 16) was captured at load; none on eager.
        expect(graphs.memory().graphsCaptured).toBe(5);
        expect(eager.memory().graphsCaptured).toBe(0);
      });
    });
  },
);
