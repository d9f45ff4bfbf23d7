// ForwardBatch.previousTokens (overlap scheduling): step N + 1 is staged while step N runs, its decode rows
// taking N's sampled tokens on the device. Reference: the same steps one at a time with the tokens given
// explicitly, on a second executor of the same checkpoint. Graph (pure decode) and packed (mixed) steps both,
// without and with penalties (which then count each placeholder row's input token on the device).
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range, type SeqStep } from '@ferrum/models/testing';
import {
  DEFAULT_SAMPLING_PARAMS,
  type ForwardBatch,
  type ForwardResult,
  type RowSampling,
  type SamplingParams,
  seededRandom,
} from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const models = tinyModels().slice(0, 2);

const PROMPT_LENGTHS = [7, 90, 33];
const LATE_PROMPT = 20; // a fourth sequence prefilled beside decode rows (a packed, non-graph step)
const SLOT_BASE = [0, 500, 1000, 1500];
const DECODE_STEPS = 6;

interface Seq {
  readonly prompt: number[];
  readonly outputs: number[];
}

/** Row sampling: sequence 1 samples at temperature 0.8 (seeded draws), the others greedily; `extra` on top. */
function rowFor(s: number, seq: Seq, extra: Partial<SamplingParams>): RowSampling {
  return {
    requestId: `seq${s}`,
    params: { ...DEFAULT_SAMPLING_PARAMS, temperature: s === 1 ? 0.8 : 0, logprobs: 0, ...extra },
    seed: 901 + s,
    // Chained, the last output of a row taking a previous token is a 0 held for it: the count is right (the
    // seeded draw's step), and penalties must not read the value.
    outputTokenIds: Int32Array.from(seq.outputs),
    promptTokenIds: Int32Array.from(seq.prompt),
    needsHostLogits: false,
  };
}

/** A decode step of `active` sequences (one row each); `last` gives each row's input token. */
function decodeStep(
  active: number[],
  seqs: Seq[],
  last: (s: number) => number,
  extra: Partial<SamplingParams> = {},
): ForwardBatch {
  const steps: SeqStep[] = active.map((s) => {
    const length = seqs[s].prompt.length + seqs[s].outputs.length;
    return { tokens: [last(s)], kvSlots: range(SLOT_BASE[s], length), sample: 'last' };
  });
  return buildBatch(steps, (row) => rowFor(active[row], seqs[active[row]], extra));
}

describe.skipIf(!available || models.length === 0)(
  `cuda: previous tokens of a step still in flight${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(models.map((m) => [m.label, m.dir] as const))('%s', (_label, dir) => {
      let reference: CudaModelExecutor;
      let chained: CudaModelExecutor;
      let prompts: number[][] = [];
      beforeAll(async () => {
        const config = await loadModelConfig(dir);
        const random = seededRandom(4242);
        const next = () => Math.floor(random() * config.vocabSize);
        prompts = [...PROMPT_LENGTHS, LATE_PROMPT].map((length) => Array.from({ length }, next));
        reference = (await loadCuda(dir, config)) as CudaModelExecutor;
        chained = (await loadCuda(dir, config)) as CudaModelExecutor;
      });
      afterAll(async () => {
        await reference?.dispose();
        await chained?.dispose();
      });

      const prefill = (active: number[], seqs: Seq[], extra: Partial<SamplingParams> = {}) =>
        buildBatch(
          active.map((s) => ({
            tokens: seqs[s].prompt,
            kvSlots: range(SLOT_BASE[s], seqs[s].prompt.length),
            sample: 'last',
          })),
          (row) => rowFor(active[row], seqs[active[row]], extra),
        );

      it.each<[string, Partial<SamplingParams>]>([
        ['no penalties', {}],
        ['penalties', { repetitionPenalty: 1.3, presencePenalty: 0.4, frequencyPenalty: 0.3 }],
        ['allowed ids and a bias', { allowedTokenIds: range(2, 40), logitBias: { 5: 2 } }],
      ])('samples what the same steps sample one at a time with explicit tokens (%s)', async (_, extra) => {
        /** Step 1 + DECODE_STEPS: a mixed step, the late sequence's prefill beside the others' decode rows. */
        const mixed = (seqs: Seq[], last: (s: number) => number) => {
          const decodes = [0, 1, 2].map((s) => ({
            tokens: [last(s)],
            kvSlots: range(SLOT_BASE[s], seqs[s].prompt.length + seqs[s].outputs.length),
            sample: 'last' as const,
          }));
          const late = {
            tokens: seqs[3].prompt,
            kvSlots: range(SLOT_BASE[3], LATE_PROMPT),
            sample: 'last' as const,
          };
          return buildBatch([...decodes, late], (row) => rowFor(row, seqs[row], extra));
        };
        const fresh = (): Seq[] => prompts.map((prompt) => ({ prompt, outputs: [] }));
        const active = [0, 1, 2];
        const graphStepsBefore = [reference.memory().graphSteps, chained.memory().graphSteps];

        // Reference: each step awaited, its input tokens known on the host.
        const ref = fresh();
        const take = (result: ForwardResult, rows: number[], seqs: Seq[]) => {
          for (const [r, s] of rows.entries()) seqs[s].outputs.push(result.tokens[r]);
        };
        const known = (s: number) => ref[s].outputs.at(-1)!;
        take(await reference.forward(prefill(active, ref, extra)), active, ref);
        for (let i = 0; i < DECODE_STEPS; i++) {
          take(await reference.forward(decodeStep(active, ref, known, extra)), active, ref);
        }
        take(await reference.forward(mixed(ref, known)), [0, 1, 2, 3], ref);
        take(await reference.forward(decodeStep([0, 1, 2, 3], ref, known, extra)), [0, 1, 2, 3], ref);

        // Chained: step N + 1 goes in before step N is awaited; its rows name N's samples. Every decode
        // row r takes sample r of the step before (rows and samples line up in these batches).
        const got = fresh();
        const placeholder = () => 0;
        const withPrevious = (batch: ForwardBatch, count: number): ForwardBatch => ({
          ...batch,
          previousTokens: {
            rows: Int32Array.from(range(0, count)),
            sampleIndices: Int32Array.from(range(0, count)),
          },
        });
        // Each launch holds a 0 in its sequences' outputs (the count is what the seeded draw needs) until it settles.
        const pending: { result: Promise<ForwardResult>; rows: number[]; at: number[] }[] = [];
        const launch = (batch: ForwardBatch, rows: number[]) => {
          const at = rows.map((s) => got[s].outputs.push(0) - 1);
          pending.push({ result: chained.forward(batch), rows, at });
        };
        const settle = async () => {
          const { result, rows, at } = pending.shift()!;
          const tokens = (await result).tokens;
          for (const [r, s] of rows.entries()) got[s].outputs[at[r]] = tokens[r];
        };
        launch(prefill(active, got, extra), active);
        for (let i = 0; i < DECODE_STEPS; i++) {
          launch(withPrevious(decodeStep(active, got, placeholder, extra), 3), active);
          await settle();
        }
        launch(withPrevious(mixed(got, placeholder), 3), [0, 1, 2, 3]);
        await settle();
        launch(withPrevious(decodeStep([0, 1, 2, 3], got, placeholder, extra), 4), [0, 1, 2, 3]);
        await settle();
        await settle();

        for (let s = 0; s < 4; s++) expect(got[s].outputs, `sequence ${s}`).toEqual(ref[s].outputs);
        const graphSteps = [reference.memory().graphSteps, chained.memory().graphSteps];
        expect(graphSteps[1] - graphStepsBefore[1]).toBe(graphSteps[0] - graphStepsBefore[0]);
        expect(graphSteps[1] - graphStepsBefore[1]).toBe(DECODE_STEPS + 1);
      });

      it('rejects previous tokens the step before did not sample, a third step, and host logits behind a step', async () => {
        const seqs: Seq[] = prompts.map((prompt) => ({ prompt, outputs: [] }));
        await chained.forward(prefill([0], seqs)); // one sample
        seqs[0].outputs.push(0);
        const outOfRange = {
          ...decodeStep([0], seqs, () => 0),
          previousTokens: { rows: Int32Array.of(0), sampleIndices: Int32Array.of(1) },
        };
        await expect(chained.forward(outOfRange)).rejects.toThrow(/previousTokens.sampleIndices/);

        const first = chained.forward(decodeStep([0], seqs, () => 0));
        const second = chained.forward(decodeStep([0], seqs, () => 0));
        await expect(chained.forward(decodeStep([0], seqs, () => 0))).rejects.toThrow(
          /two steps are already in flight/,
        );
        await Promise.all([first, second]);

        const running = chained.forward(decodeStep([0], seqs, () => 0));
        const hostLogits = decodeStep([0], seqs, () => 0);
        const withHostRow = {
          ...hostLogits,
          sampling: [{ ...hostLogits.sampling![0], needsHostLogits: true }],
        };
        await expect(chained.forward(withHostRow)).rejects.toThrow(/host logits/);
        await running;
      });
    });
  },
);
