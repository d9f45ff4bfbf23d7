// A model's steps (a prefill, then decode graphs) give the same bits every time, also while another process uses
// the GPU. Reference: the same steps on the same executor before the other process starts. The GPU time-slices
// between the two processes' contexts, so the test's kernels are stopped and resumed at arbitrary points: a
// missing barrier between a block's warps shows as logits that change from run to run (the fused RoPE's sin/cos
// table did, before it had one). Programmatic launch is off here because its waits usually give a block's warps
// time to line up, which hides such races (FERRUM_CUDA_PDL=0 is read when a model loads).
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range } from '@ferrum/models/testing';
import { DEFAULT_SAMPLING_PARAMS, type ForwardResult, type RowSampling } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
const SLOT_BASE = [0, 500, 1000];
const DECODE_STEPS = 8;
const ROUNDS = 25;

describe.skipIf(!available || models.length === 0)(
  `cuda: decode graphs repeat bit for bit while another process uses the GPU${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(cases)('$label', ({ dir, dummy }) => {
      let executor: CudaModelExecutor;
      let vocab = 0;
      beforeAll(async () => {
        const config = await loadModelConfig(dir);
        vocab = config.vocabSize;
        const pdl = process.env.FERRUM_CUDA_PDL;
        process.env.FERRUM_CUDA_PDL = '0';
        try {
          executor = (await loadCuda(dir, config, {}, dummy ? 'dummy' : 'safetensors')) as CudaModelExecutor;
        } finally {
          if (pdl === undefined) delete process.env.FERRUM_CUDA_PDL;
          else process.env.FERRUM_CUDA_PDL = pdl;
        }
      });
      afterAll(async () => {
        await executor?.dispose();
      });

      it('samples the same tokens with the same log-probabilities in every round', async () => {
        let state = 4242;
        const next = () => {
          state = (state * 1103515245 + 12345) % 2 ** 31;
          return state % vocab;
        };
        const prompts = PROMPT_LENGTHS.map((length) => Array.from({ length }, next));
        /** One round: the prompts' prefill, then decode steps (graphs); every sampled token and log-probability. */
        const round = async (): Promise<number[]> => {
          const outputs: number[][] = prompts.map(() => []);
          const seen: number[] = [];
          const rowFor = (s: number): RowSampling => ({
            requestId: `seq${s}`,
            params: { ...DEFAULT_SAMPLING_PARAMS, temperature: s === 1 ? 0.8 : 0, logprobs: 0 },
            seed: 901 + s,
            outputTokenIds: Int32Array.from(outputs[s]),
            promptTokenIds: Int32Array.from(prompts[s]),
            needsHostLogits: false,
          });
          const take = (result: ForwardResult) => {
            for (let s = 0; s < prompts.length; s++) {
              outputs[s].push(result.tokens[s]);
              seen.push(result.tokens[s], result.logprobs![s]);
            }
          };
          take(
            await executor.forward(
              buildBatch(
                prompts.map((p, s) => ({
                  tokens: p,
                  kvSlots: range(SLOT_BASE[s], p.length),
                  sample: 'last',
                })),
                rowFor,
              ),
            ),
          );
          for (let i = 0; i < DECODE_STEPS; i++) {
            const steps = prompts.map((p, s) => ({
              tokens: [outputs[s].at(-1)!],
              kvSlots: range(SLOT_BASE[s], p.length + outputs[s].length),
              sample: 'last' as const,
            }));
            take(await executor.forward(buildBatch(steps, rowFor)));
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
            const at = seen.findIndex((value, i) => !Object.is(value, reference[i]));
            // Entries come in (token, log-probability) pairs, one pair a sequence, prompts.length pairs a step.
            const step = Math.floor(at / (2 * PROMPT_LENGTHS.length));
            expect(at, `round ${r}: step ${step} differs (entry ${at})`).toBe(-1);
          }
        } finally {
          contender.kill();
        }
        expect(executor.memory().graphSteps - graphStepsBefore).toBe((ROUNDS + 1) * DECODE_STEPS);
      });
    });
  },
);
