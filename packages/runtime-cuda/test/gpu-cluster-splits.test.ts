// A chunk over a long cached prefix is cut into kv splits. On Hopper builds (sm_90a) the producer-warp prefill
// kernel merges a tile's splits inside a thread-block cluster (distributed shared memory); elsewhere, and with
// FERRUM_CUDA_CLUSTER_SPLITS=0, the splits go through global memory and prefillCombineKernel. Both merges share
// splitWeights / mergeSplits (explicitly rounded), so the logits must be the same bits. The shapes cover 3, 4 and
// 8 splits (uneven and even shares of the tile's rows), a partial tile, two heads a block and one.
import { loadModelConfig } from '@ferrum/models';
import { buildBatch, range } from '@ferrum/models/testing';
import { seededRandom } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CudaModelExecutor, createCudaBackend } from '../src/index.js';
import { cudaAvailability, differingBits, dummyQwen3Dir, loadCuda, prefillInSteps } from './support.js';

const { available, reason } = await cudaAvailability();
const capabilities = available ? await createCudaBackend().probe() : null;
const builtArchitectures = String(capabilities?.backendOptions?.builtArchitectures ?? '');
const hopper =
  String(capabilities?.backendOptions?.computeCapability ?? '').startsWith('9.') &&
  builtArchitectures.split(/[\s;,]+/).includes('90a');
const skipReason = !available ? reason : 'needs a Hopper GPU and an sm_90a build';

describe.skipIf(!hopper)(
  `cuda: kv splits merged in a cluster equal the combine kernel's${hopper ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    // Splits: min(2 × multiprocessors / (tiles × heads), (prefix + chunk) / 256) with 4 heads and one tile.
    describe.each([
      { headDim: 128, kvHeads: 2, prefix: 1100, chunk: 64 }, // 4 splits, two heads a block
      { headDim: 128, kvHeads: 2, prefix: 2100, chunk: 64 }, // 8 splits
      { headDim: 64, kvHeads: 4, prefix: 800, chunk: 50 }, // 3 splits over a partial tile, one head a block
    ])(
      'head dim $headDim, $kvHeads kv heads, $chunk rows over $prefix',
      ({ headDim, kvHeads, prefix, chunk }) => {
        const executors: CudaModelExecutor[] = [];
        let vocab = 0;
        const prompt: number[] = [];
        beforeAll(async () => {
          const dir = dummyQwen3Dir(headDim, 4, kvHeads);
          const config = await loadModelConfig(dir);
          vocab = config.vocabSize;
          const load = async () =>
            (await loadCuda(dir, config, { enforceEager: true }, 'dummy')) as CudaModelExecutor;
          executors.push(await load());
          // The runner reads the switch when the model loads.
          vi.stubEnv('FERRUM_CUDA_CLUSTER_SPLITS', '0');
          executors.push(await load().finally(() => vi.unstubAllEnvs()));
          const random = seededRandom(7);
          for (let i = 0; i < prefix + chunk; i++) prompt.push(Math.floor(random() * vocab));
        });
        afterAll(async () => {
          for (const executor of executors) await executor.dispose();
        });

        const chunkLogits = async (executor: CudaModelExecutor) => {
          await prefillInSteps(executor, prompt.slice(0, prefix), 0);
          const end = prefix + chunk;
          const mergedBefore = executor.memory().clusterMergedLaunches;
          const result = await executor.forward(
            buildBatch([{ tokens: prompt.slice(prefix, end), kvSlots: range(0, end), sample: 'all' }]),
          );
          if (!result.logits) throw new Error('no logits returned');
          return { logits: result.logits, merged: executor.memory().clusterMergedLaunches - mergedBefore };
        };

        it('gives the same logits, bit for bit', async () => {
          const [clustered, combined] = [await chunkLogits(executors[0]), await chunkLogits(executors[1])];
          // The chunk's two layers merged their splits in clusters by default, and not with the switch off.
          expect(clustered.merged).toBe(2);
          expect(combined.merged).toBe(0);
          const [cluster, combine] = [clustered.logits, combined.logits];
          expect(cluster.length).toBe(chunk * vocab);
          expect(cluster.some((v) => v !== 0)).toBe(true);
          expect(differingBits(cluster, combine)).toBe(0);
        });
      },
    );
  },
);
