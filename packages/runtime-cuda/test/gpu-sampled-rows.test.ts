// Steps that sample fewer rows than they run take the last layer past its KV write for the sampled rows only
// (native/step-execute.cc). The sampled rows' logits must be those of the whole prompt's rows (every row
// sampled, the full last layer) and transformers', and chunks that sample nothing must still leave the last
// layer's KV for the chunks after them.
import { buildBatch, type Golden, maxAbsDiff, range, readGolden, valueRange } from '@ferrum/models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const models = tinyModels();

/** Same rows through other kernels (the GEMV and the decode attention kernel): as gpu-golden's decodeRow. */
const PATH_TOLERANCE = 5e-3;
/** Against transformers: the issue's bf16 tolerance, as gpu-golden's. */
const GOLDEN_TOLERANCE = 2e-2;
const CHUNK = 7;

describe.skipIf(!available || models.length === 0)(
  `cuda: the last layer for sampled rows only${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    describe.each(models.map((m) => [m.label, m.dir] as const))('%s', (_label, dir) => {
      let executor: CudaModelExecutor;
      let golden: Golden;
      let vocab = 0;
      /** Per prompt, the logits of its last row with every row sampled. */
      let lastRows: Float32Array[] = [];
      const lastGoldenRow = (p: number) =>
        golden.logits[p].subarray((golden.prompts[p].length - 1) * vocab, golden.prompts[p].length * vocab);
      const expectRow = (row: Float32Array, p: number, what: string) => {
        expect(maxAbsDiff(row, lastRows[p]), `${what}: against all rows sampled`).toBeLessThanOrEqual(
          PATH_TOLERANCE * valueRange(lastRows[p]),
        );
        const want = lastGoldenRow(p);
        expect(maxAbsDiff(row, want), `${what}: against transformers`).toBeLessThanOrEqual(
          GOLDEN_TOLERANCE * valueRange(want),
        );
      };

      beforeAll(async () => {
        golden = await readGolden(dir);
        vocab = golden.config.vocabSize;
        executor = (await loadCuda(dir, golden.config)) as CudaModelExecutor;
        lastRows = [];
        for (const prompt of golden.prompts) {
          const { logits } = await executor.forward(
            buildBatch([{ tokens: prompt, kvSlots: range(0, prompt.length), sample: 'all' }]),
          );
          lastRows.push(logits!.slice((prompt.length - 1) * vocab));
        }
      });
      afterAll(() => executor?.dispose());

      it('gives each prompt of a flattened batch its last row', async () => {
        const { logits } = await executor.forward(
          buildBatch(
            golden.prompts.map((prompt, p) => ({
              tokens: prompt,
              kvSlots: range(100 * p, prompt.length),
              sample: 'last' as const,
            })),
          ),
        );
        for (let p = 0; p < golden.prompts.length; p++) {
          expectRow(logits!.subarray(p * vocab, (p + 1) * vocab), p, `prompt ${p}`);
        }
      });

      it('keeps the last layer KV of chunks that sample nothing', async () => {
        const p = golden.prompts.length - 1;
        const prompt = golden.prompts[p];
        let logits: Float32Array | undefined;
        for (let start = 0; start < prompt.length; start += CHUNK) {
          const end = Math.min(prompt.length, start + CHUNK);
          const result = await executor.forward(
            buildBatch([
              {
                tokens: prompt.slice(start, end),
                kvSlots: range(1000, end),
                sample: end === prompt.length ? 'last' : 'none',
              },
            ]),
          );
          logits = result.logits;
        }
        expectRow(logits!, p, 'chunked');
      });
    });
  },
);
