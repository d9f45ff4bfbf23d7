import type { ModelExecutor } from '@ferrum/interfaces';
import type { ModelConfig } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBatch, greedyRow, maxAbsDiff, range, type SeqStep, valueRange } from './batch-builder.js';
import { type Golden, readGolden, type TinyModel } from './golden-fixtures.js';

/** A limit on max |a - b|: a fixed amount, or a fraction of the reference rows' range (max - min). */
export type Tolerance = { readonly absolute: number } | { readonly fractionOfRange: number };

/** How far a backend may stray, per kind of check. */
export interface ConformanceTolerances {
  /** Against transformers' logits: max abs error ≤ `golden` × the golden logits' range, per prompt. */
  readonly golden: number;
  /** One-token steps (the prompt decoded token by token, prefill chunks of one) against the prompt's prefill rows. */
  readonly decodeRow: Tolerance;
  /** Multi-token rows run in another batch (all prompts flattened, longer chunks) against the prompt's prefill rows. */
  readonly batched: Tolerance;
}

/** What {@link describeExecutorConformance} runs, and on which executors. */
export interface ExecutorConformanceOptions {
  /** Title of the top-level `describe`; the skip reason is appended when skipped. */
  readonly label: string;
  /** Tiny checkpoints with goldens (see `tinyModelsIn`); each gets its own executor. */
  readonly models: readonly TinyModel[];
  /**
   * Loads `dir` on the backend under test. The KV pool must hold slots [0, 3000 + the longest prompt's
   * length) and a step must fit every prompt of the checkpoint at once.
   */
  load(dir: string, config: ModelConfig): Promise<ModelExecutor>;
  /** Why the backend cannot run here (e.g. the probe's reason), or null to run. */
  readonly skip: string | null;
  readonly tolerances: ConformanceTolerances;
  /** Chunk sizes of the chunked-prefill checks; default [1, 5, 16]. */
  readonly chunkSizes?: readonly number[];
  /**
   * Steps of at most this many rows run their products on another kernel than a whole prompt does (CUDA's GEMV
   * takes up to 8 rows, cuBLASLt more), so a chunk in such a step is held to `decodeRow`, not `batched`;
   * default 0 (every multi-token step shares the prompt's kernels).
   */
  readonly smallStepRows?: number;
  /** Also reproduce transformers' greedy continuations token for token (for f32-exact backends). */
  readonly greedyContinuation?: boolean;
}

/** Slots per prompt in flattened batches; the tiny fixtures' prompts plus a greedy continuation fit. */
const FLAT_STRIDE = 100;
const DECODE_BASE = 1000;
const BYSTANDER_BASE = 2000;
const CHUNK_BASE = 3000;

/**
 * Registers the checks every ComputeBackend's ModelExecutor must pass on the tiny checkpoints, inside a
 * `describe(label)` with one nested `describe` per model. Each model's prompts are first prefilled alone at
 * slots [0, n) with logits at every position (its "prefill rows"); then:
 * - those rows match transformers' logits within `tolerances.golden` of the range;
 * - their argmax is transformers' wherever its top-2 margin exceeds 1% of the range;
 * - decoding the longest prompt one token at a time reproduces its rows (`decodeRow`);
 * - greedy sampling over all prompts in one step returns each row's argmax (where its top-2 margin exceeds
 *   1e-3 of the row's range) and its log-softmax to 2 decimals;
 * - all prompts flattened into one step reproduce their rows (`batched`);
 * - the longest prompt prefilled in chunks, each beside a bystander sequence of changing length and side,
 *   reproduces its rows (`decodeRow` for chunks of one, `batched` otherwise);
 * - with `greedyContinuation`, greedy decoding through the KV pool yields transformers' continuation.
 */
export function describeExecutorConformance(options: ExecutorConformanceOptions): void {
  const { models, load, tolerances } = options;
  const reason = options.skip ?? (models.length === 0 ? 'no tiny models' : null);
  describe.skipIf(reason !== null)(
    `${options.label}${reason === null ? '' : ` (skipped: ${reason})`}`,
    () => {
      // Without models nothing below registers; one skipped entry keeps the reason in the report.
      if (models.length === 0) it.skip('every check', () => {});
      describe.each(models.map((m) => [m.label, m.dir] as const))('%s', (_label, dir) => {
        let golden: Golden;
        let executor: ModelExecutor;
        let alone: Float32Array[];
        let vocab: number;
        /** Index of the last prompt, the longest one of the tiny fixtures. */
        let longest: number;
        beforeAll(async () => {
          golden = await readGolden(dir);
          vocab = golden.config.vocabSize;
          longest = golden.prompts.length - 1;
          executor = await load(dir, golden.config);
          const needed = CHUNK_BASE + golden.prompts[longest].length;
          if (executor.kv.numSlots < needed) {
            throw new Error(`conformance needs ${needed} KV slots, the executor has ${executor.kv.numSlots}`);
          }
          alone = [];
          for (const prompt of golden.prompts) alone.push(await prefillAll(executor, prompt));
        });
        afterAll(() => executor?.dispose());

        /** Every prompt in one step, prompt p at slots [100p, 100p + n). */
        const flattened = (): SeqStep[] =>
          golden.prompts.map((prompt, p) => ({
            tokens: prompt,
            kvSlots: range(p * FLAT_STRIDE, prompt.length),
            sample: 'all',
          }));

        it('matches the golden logits at every position within tolerance', () => {
          for (const [p, want] of golden.logits.entries()) {
            expect(alone[p].length, `prompt ${p}: logits length`).toBe(want.length);
            const error = maxAbsDiff(alone[p], want);
            expect(error, `prompt ${p}: max abs error vs range ${valueRange(want)}`).toBeLessThanOrEqual(
              tolerances.golden * valueRange(want),
            );
          }
        });

        it("picks transformers' argmax wherever its top-2 margin exceeds 1% of the range", () => {
          let checked = 0;
          for (const [p, want] of golden.logits.entries()) {
            const margin = 0.01 * valueRange(want);
            for (let row = 0; row < want.length / vocab; row++) {
              const ref = want.subarray(row * vocab, (row + 1) * vocab);
              const [first, second] = topTwo(ref);
              if (ref[first] - ref[second] <= margin) continue;
              const got = topTwo(alone[p].subarray(row * vocab, (row + 1) * vocab))[0];
              expect(got, `prompt ${p} row ${row}`).toBe(first);
              checked++;
            }
          }
          expect(checked).toBeGreaterThan(0);
        });

        it('reproduces the prefill logits when the prompt is decoded one token at a time', async () => {
          const prompt = golden.prompts[longest];
          for (let i = 0; i < prompt.length; i++) {
            const step: SeqStep = { tokens: [prompt[i]], kvSlots: range(DECODE_BASE, i + 1), sample: 'last' };
            const { logits } = await executor.forward(buildBatch([step]));
            const want = alone[longest].subarray(i * vocab, (i + 1) * vocab);
            expect(maxAbsDiff(logits!, want), `position ${i}`).toBeLessThanOrEqual(
              limit(tolerances.decodeRow, want),
            );
          }
        });

        it('samples greedily: the argmax of the logits it computes, with its log-softmax', async () => {
          const { tokens, logprobs } = await executor.forward(buildBatch(flattened(), greedyRow));
          const all = alone.flatMap((rows) =>
            Array.from({ length: rows.length / vocab }, (_, r) => rows.subarray(r * vocab, (r + 1) * vocab)),
          );
          expect(tokens.length).toBe(all.length);
          for (const [i, row] of all.entries()) {
            const [first, second] = topTwo(row);
            if (row[first] - row[second] > 1e-3 * valueRange(row)) expect(tokens[i], `row ${i}`).toBe(first);
            expect(logprobs![i], `row ${i} raw logprob`).toBeCloseTo(row[tokens[i]] - logSumExp(row), 2);
          }
        });

        it('gives every prompt the same logits in one flattened batch', async () => {
          const { logits } = await executor.forward(buildBatch(flattened()));
          let row = 0;
          for (const [p, prompt] of golden.prompts.entries()) {
            const rows = logits!.subarray(row * vocab, (row + prompt.length) * vocab);
            expect(maxAbsDiff(rows, alone[p]), `prompt ${p}`).toBeLessThanOrEqual(
              limit(tolerances.batched, alone[p]),
            );
            row += prompt.length;
          }
        });

        it.each(options.chunkSizes ?? [1, 5, 16])(
          'gives the same logits when the prompt is prefilled in chunks of %i',
          async (chunk) => {
            const prompt = golden.prompts[longest];
            for (let start = 0; start < prompt.length; start += chunk) {
              const tokens = prompt.slice(start, start + chunk);
              // A bystander of changing length shares every step, so each chunk runs in a different batch. Every
              // row is sampled, so every row runs every layer: a backend may run the last layer for the sampled
              // rows only, on other kernels (CUDA does), and checks that path in its own tests.
              const other = golden.prompts[(start / chunk) % golden.prompts.length];
              // Chunks of one token are decode rows; longer chunks run the prefill path like the whole prompt,
              // on the same product kernels unless the step is small.
              const small = tokens.length + other.length <= (options.smallStepRows ?? 0);
              const tolerance = chunk === 1 || small ? tolerances.decodeRow : tolerances.batched;
              const bystander: SeqStep = {
                tokens: other,
                kvSlots: range(BYSTANDER_BASE, other.length),
                sample: 'all',
              };
              const step: SeqStep = {
                tokens,
                kvSlots: range(CHUNK_BASE, start + tokens.length),
                sample: 'all',
              };
              const first = start % 2 === 0;
              const { logits } = await executor.forward(
                buildBatch(first ? [bystander, step] : [step, bystander]),
              );
              const rows = first
                ? logits!.subarray(other.length * vocab)
                : logits!.subarray(0, tokens.length * vocab);
              const want = alone[longest].subarray(start * vocab, (start + tokens.length) * vocab);
              expect(maxAbsDiff(rows, want), `chunk at ${start}`).toBeLessThanOrEqual(limit(tolerance, want));
            }
          },
        );

        if (!options.greedyContinuation) return;
        it('reproduces the greedy continuation through the KV pool', async () => {
          for (const [p, prompt] of golden.prompts.entries()) {
            // Each prompt gets its own slot range so stale entries of an earlier prompt cannot help.
            const base = p * FLAT_STRIDE;
            const slots = range(base, prompt.length);
            let result = await executor.forward(
              buildBatch([{ tokens: prompt, kvSlots: slots, sample: 'last' }], greedyRow),
            );
            const generated: number[] = [];
            for (let step = 0; step < golden.greedy[p].length; step++) {
              const token = result.tokens[0];
              generated.push(token);
              if (step === golden.greedy[p].length - 1) break;
              slots.push(base + slots.length);
              result = await executor.forward(
                buildBatch([{ tokens: [token], kvSlots: slots, sample: 'last' }], greedyRow),
              );
            }
            expect(generated, `prompt ${p}`).toEqual(golden.greedy[p]);
          }
        });
      });
    },
  );
}

/** Logits of every position of `prompt`, prefilled alone at slots [0, length). */
async function prefillAll(executor: ModelExecutor, prompt: readonly number[]): Promise<Float32Array> {
  const result = await executor.forward(
    buildBatch([{ tokens: prompt, kvSlots: range(0, prompt.length), sample: 'all' }]),
  );
  if (!result.logits) throw new Error('no logits returned');
  return result.logits;
}

function limit(tolerance: Tolerance, want: Float32Array): number {
  return 'absolute' in tolerance ? tolerance.absolute : tolerance.fractionOfRange * valueRange(want);
}

/** Indices of the largest and second-largest values (the first of equals wins). */
function topTwo(row: Float32Array): [number, number] {
  let first = 0;
  let second = -1;
  for (let i = 1; i < row.length; i++) {
    if (row[i] > row[first]) {
      second = first;
      first = i;
    } else if (second < 0 || row[i] > row[second]) {
      second = i;
    }
  }
  return [first, second];
}

function logSumExp(row: Float32Array): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const value of row) max = Math.max(max, value);
  let sum = 0;
  for (const value of row) sum += Math.exp(value - max);
  return max + Math.log(sum);
}
