// The host threads' two ways of waiting for steps (native/host-spin.h): polling (the default) and blocking
// (`backendOptions.spinWait: false`). Each executor reports its mode, and both settle the same forwards, two in flight
// at a time, with the same tokens.
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range } from '@ferrum/models/testing';
import { DEFAULT_SAMPLING_PARAMS, type ForwardBatch, type RowSampling, seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CudaModelExecutor } from '../src/index.js';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const model = tinyModels()[0];

describe.skipIf(!available || model === undefined)(
  `cuda: polling and blocking host waits${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    let polling: CudaModelExecutor;
    let blocking: CudaModelExecutor;
    let vocab = 0;
    beforeAll(async () => {
      const config = await loadModelConfig(model.dir);
      vocab = config.vocabSize;
      polling = (await loadCuda(model.dir, config, { spinWait: true })) as CudaModelExecutor;
      blocking = (await loadCuda(model.dir, config, { spinWait: false })) as CudaModelExecutor;
    });
    afterAll(async () => {
      await polling?.dispose();
      await blocking?.dispose();
    });

    it('reports its mode', () => {
      expect(polling.memory().spinWait).toBe(true);
      expect(blocking.memory().spinWait).toBe(false);
    });

    it('settles two forwards in flight with the same tokens either way', async () => {
      const random = seededRandom(4242);
      const prompts = [0, 1].map(() => Array.from({ length: 24 }, () => Math.floor(random() * vocab)));
      const row = (s: number): RowSampling => ({
        requestId: `seq${s}`,
        params: { ...DEFAULT_SAMPLING_PARAMS, temperature: 0 },
        seed: s,
        outputTokenIds: new Int32Array(0),
        promptTokenIds: Int32Array.from(prompts[s]),
        needsHostLogits: false,
      });
      // Two independent sequences (slots 0.. and 1000..), each step of one sent while the other's runs.
      const batchOf = (s: number, decode: boolean): ForwardBatch => {
        const tokens = prompts[s];
        return buildBatch(
          [
            {
              tokens: decode ? [tokens[tokens.length - 1]] : tokens,
              kvSlots: range(1000 * s, tokens.length),
              sample: 'last',
            },
          ],
          () => row(s),
        );
      };
      for (let step = 0; step < 6; step++) {
        const batches = [batchOf(0, step > 0), batchOf(1, step > 0)];
        const [p0, p1, b0, b1] = await Promise.all([
          polling.forward(batches[0]),
          polling.forward(batches[1]),
          blocking.forward(batches[0]),
          blocking.forward(batches[1]),
        ]);
        expect([p0.tokens[0], p1.tokens[0]]).toEqual([b0.tokens[0], b1.tokens[0]]);
        prompts[0].push(p0.tokens[0]);
        prompts[1].push(p1.tokens[0]);
      }
    });
  },
);
