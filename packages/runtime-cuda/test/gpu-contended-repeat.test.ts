// A model's steps (prefills, prompt chunks over a cached prefix, decode graphs with and without penalties, eager
// decode steps) give the same
// bits every time, also while another process uses the GPU. Reference: the same steps on the same executor before
// the other process starts. The GPU time-slices between the two processes' contexts, so the test's kernels are
// stopped and resumed at arbitrary points: a missing barrier between a block's warps shows as logits that change
// from run to run (the fused RoPE's sin/cos table did, before it had one). Programmatic launch is off here because
// its waits usually give a block's warps time to line up, which hides such races (FERRUM_CUDA_PDL=0 is read when a
// model loads).
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range, type SeqStep } from '@ferrum/models/testing';
import { DEFAULT_SAMPLING_PARAMS, type RowSampling, seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, dummyQwen3Dir, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const models = tinyModels();
/**
 * The tiny checkpoints, then dummy weights in real attention shapes: head dim 128 with 4 query heads a kv head
 * (Qwen3-4B's, the wgmma prefill kernel on Hopper) and head dim 64 with 8 (the largest group decode graphs fuse).
 */
const cases = [
  ...models.map((m) => ({ label: m.label, dir: m.dir, dummy: false })),
  ...(available
    ? [
        { label: 'dummy head dim 128, 8 heads, 2 kv heads', dir: dummyQwen3Dir(128, 8, 2), dummy: true },
        { label: 'dummy head dim 64, 16 heads, 2 kv heads', dir: dummyQwen3Dir(64, 16, 2), dummy: true },
      ]
    : []),
];
const here = path.dirname(fileURLToPath(import.meta.url));
/** tsx's loader, so the forked contender runs TypeScript from the workspace sources. */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const PROMPT_LENGTHS = [7, 90, 33];
const LONG_PREFIX = 1100;
const LONG_CHUNK = 64;
/** The long prompt's steps: chunks within the 512-token step budget, then LONG_CHUNK over LONG_PREFIX cached. */
const LONG_CHUNKS = [
  [0, 500],
  [500, 1000],
  [1000, LONG_PREFIX],
  [LONG_PREFIX, LONG_PREFIX + LONG_CHUNK],
];
const SLOT_BASE = [0, 500, 1000, 1500];
const DECODE_STEPS = 8;
/** Decode steps after those in which sequence 2 has a repetition penalty (sparse adjustments, still graphs). */
const PENALTY_STEPS = 2;
/** Decode steps after those in which sequence 2's logits go to the host, which runs them eagerly. */
const EAGER_DECODE_STEPS = 2;
const ROUNDS = 25;

describe.skipIf(!available || models.length === 0)(
  `cuda: steps repeat bit for bit while another process uses the GPU${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(cases)('$label', ({ dir, dummy }) => {
      let executor: CudaModelExecutor;
      let vocab = 0;
      beforeAll(async () => {
        const config = await loadModelConfig(dir);
        vocab = config.vocabSize;
        vi.stubEnv('FERRUM_CUDA_PDL', '0');
        try {
          executor = (await loadCuda(dir, config, {}, dummy ? 'dummy' : 'safetensors')) as CudaModelExecutor;
        } finally {
          vi.unstubAllEnvs();
        }
      });
      afterAll(async () => {
        await executor?.dispose();
      });

      it('samples the same tokens with the same log-probabilities in every round', async () => {
        const random = seededRandom(4242);
        const next = () => Math.floor(random() * vocab);
        const prompts = [...PROMPT_LENGTHS, LONG_PREFIX + LONG_CHUNK].map((length) =>
          Array.from({ length }, next),
        );
        const long = PROMPT_LENGTHS.length;
        /** One round's steps, each step's sampled tokens and log-probabilities. */
        const round = async (): Promise<number[][]> => {
          const outputs: number[][] = prompts.map(() => []);
          const seen: number[][] = [];
          let penalty = false;
          let hostLogits = false;
          // Sequence 1 draws at temperature 0.8 within top-k and top-p (seeded); the others are greedy.
          const rowFor = (s: number): RowSampling => ({
            requestId: `seq${s}`,
            params: {
              ...DEFAULT_SAMPLING_PARAMS,
              ...(s === 1 ? { temperature: 0.8, topK: 20, topP: 0.9 } : { temperature: 0 }),
              ...(penalty && s === 2 ? { repetitionPenalty: 1.3 } : {}),
              logprobs: 0,
            },
            seed: 901 + s,
            outputTokenIds: Int32Array.from(outputs[s]),
            promptTokenIds: Int32Array.from(prompts[s]),
            needsHostLogits: hostLogits && s === 2,
          });
          /** Runs `steps`, step i of sequence seqs[i]; each sequence that samples gets its token. */
          const run = async (seqs: number[], steps: SeqStep[]) => {
            const sampling = seqs.filter((_, i) => steps[i].sample !== 'none');
            const result = await executor.forward(buildBatch(steps, (row) => rowFor(sampling[row])));
            const entries: number[] = [];
            sampling.forEach((s, row) => {
              // A host-logits row: its token is the argmax of its logits, and that logit is compared too.
              const i = result.logitsRows?.indexOf(row) ?? -1;
              const logits = i < 0 ? null : result.logits!.subarray(i * vocab, (i + 1) * vocab);
              const token = logits
                ? logits.reduce((best, v, id) => (v > logits[best] ? id : best), 0)
                : result.tokens[row];
              outputs[s].push(token);
              entries.push(token, logits ? logits[token] : result.logprobs![row]);
            });
            seen.push(entries);
          };
          const shortSeqs = range(0, long);
          await run(
            shortSeqs,
            shortSeqs.map((s) => ({
              tokens: prompts[s],
              kvSlots: range(SLOT_BASE[s], prompts[s].length),
              sample: 'last',
            })),
          );
          // The long prompt in chunks (the first two sample nothing), then a chunk over its 1,100 cached entries,
          // whose attention is split over the kv list (and the splits merged).
          for (const [from, to] of LONG_CHUNKS) {
            const step: SeqStep = {
              tokens: prompts[long].slice(from, to),
              kvSlots: range(SLOT_BASE[long], to),
              sample: to < LONG_PREFIX ? 'none' : 'last',
            };
            await run([long], [step]);
          }
          for (let i = 0; i < DECODE_STEPS + PENALTY_STEPS + EAGER_DECODE_STEPS; i++) {
            penalty = i >= DECODE_STEPS && i < DECODE_STEPS + PENALTY_STEPS;
            hostLogits = i >= DECODE_STEPS + PENALTY_STEPS;
            await run(
              shortSeqs,
              shortSeqs.map((s) => ({
                tokens: [outputs[s].at(-1)!],
                kvSlots: range(SLOT_BASE[s], prompts[s].length + outputs[s].length),
                sample: 'last',
              })),
            );
          }
          return seen;
        };

        const graphStepsBefore = executor.memory().graphSteps;
        const reference = await round();
        const contender = fork(path.join(here, 'gpu-contender.ts'), [models[0].dir, '60000'], {
          execArgv: ['--import', tsxLoader, '--conditions=@ferrum/source'],
          stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        });
        let stderr = '';
        contender.stderr?.on('data', (chunk) => {
          stderr += String(chunk);
        });
        try {
          await new Promise<void>((resolve, reject) => {
            contender.once('message', () => resolve());
            contender.once('exit', (code) =>
              reject(
                new Error(`the contender process exited (${code}) before it ran: ${stderr.slice(-2000)}`),
              ),
            );
          });
          for (let r = 0; r < ROUNDS; r++) {
            const seen = await round();
            const step = seen.findIndex(
              (entries, i) => !entries.every((v, j) => Object.is(v, reference[i][j])),
            );
            expect(step, `round ${r}: step ${step} differs`).toBe(-1);
          }
        } finally {
          contender.kill();
        }
        expect(executor.memory().graphSteps - graphStepsBefore).toBe(
          (ROUNDS + 1) * (DECODE_STEPS + PENALTY_STEPS),
        );
      });
    });
  },
);
