import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, type Golden, greedyRow, range, readGolden } from '@ferrum/models/testing';
import { FerrumError, type ForwardBatch } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../src/index.js';
import { loadNativeAddon } from '../src/native-addon.js';
import { expectInvalid } from './expect-invalid.js';
import { allTinyModels } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const model = allTinyModels()[0];

describe.skipIf(!addon.ok || model === undefined)(
  'bad input is rejected with FerrumError, never a crash',
  () => {
    let golden: Golden;
    let executor: ModelExecutor;
    let good: ForwardBatch;
    beforeAll(async () => {
      golden = await readGolden(model!.dir);
      executor = await loadTinyModel(model!.dir, golden.config, { maxKvTokens: 64, swapSpaceTokens: 8 });
      good = buildBatch([
        { tokens: [5, 6, 7], kvSlots: [0, 1, 2], sample: 'last' },
        { tokens: [8], kvSlots: [3, 4], sample: 'last' },
      ]);
    });
    afterAll(() => executor?.dispose());

    const cases: [string, (b: ForwardBatch) => ForwardBatch, RegExp][] = [
      [
        'token id outside the vocabulary',
        (b) => ({ ...b, tokenIds: Int32Array.of(5, 6, 100_000, 8) }),
        /tokenIds\[2\]/,
      ],
      ['negative token id', (b) => ({ ...b, tokenIds: Int32Array.of(-1, 6, 7, 8) }), /tokenIds\[0\]/],
      [
        'KV index outside the pool',
        (b) => ({ ...b, kvIndices: Int32Array.of(0, 1, 2, 64, 4) }),
        /kvIndices\[3\]/,
      ],
      [
        'positions shorter than numTokens',
        (b) => ({ ...b, positions: Int32Array.of(0, 1) }),
        /positions has 2/,
      ],
      ['qIndptr not ending at numTokens', (b) => ({ ...b, qIndptr: Int32Array.of(0, 3, 5) }), /qIndptr/],
      ['qIndptr too short for numSeqs', (b) => ({ ...b, qIndptr: Int32Array.of(0, 3) }), /qIndptr has 2/],
      ['kvIndptr past kvIndices', (b) => ({ ...b, kvIndptr: Int32Array.of(0, 3, 9) }), /kvIndptr/],
      ['fewer KV slots than new tokens', (b) => ({ ...b, kvIndptr: Int32Array.of(0, 2, 5) }), /fewer than/],
      [
        'slot mapping disagreeing with kvIndices',
        (b) => ({ ...b, slotMapping: Int32Array.of(0, 1, 9, 4) }),
        /slotMapping\[2\]/,
      ],
      [
        'position disagreeing with the KV list',
        (b) => ({ ...b, positions: Int32Array.of(0, 1, 2, 0) }),
        /positions\[3\]/,
      ],
      ['sample row outside the batch', (b) => ({ ...b, sampleRows: Int32Array.of(2, 4) }), /sampleRows\[1\]/],
      ['numTokens above maxBatchTokens', (b) => ({ ...b, numTokens: 10_000 }), /maxBatchTokens/],
      ['zero sequences', (b) => ({ ...b, numSeqs: 0 }), /numSeqs/],
      [
        'a Float32Array for token ids',
        (b) => ({ ...b, tokenIds: new Float32Array(4) as unknown as Int32Array }),
        /Int32Array/,
      ],
      [
        'sampling of the wrong length',
        (b) => ({
          ...buildBatch([{ tokens: [5], kvSlots: [0], sample: 'last' }], greedyRow),
          sampleRows: b.sampleRows,
        }),
        /sampling/,
      ],
    ];

    it.each(cases)('rejects a batch with %s', async (_name, mutate, message) => {
      await expectInvalid(executor.forward(mutate(good)), message);
    });

    it('rejects bad KV transfers', async () => {
      await expectInvalid(executor.kv.copySlots(Int32Array.of(0, 1), Int32Array.of(2)), /same length/);
      await expectInvalid(executor.kv.copySlots(Int32Array.of(0), Int32Array.of(64)), /dst\[0\]/);
      await expectInvalid(executor.kv.swapOut(Int32Array.of(0), Int32Array.of(8)), /hostSlots\[0\]/);
      await expectInvalid(executor.kv.swapIn(Int32Array.of(-1), Int32Array.of(0)), /hostSlots\[0\]/);
    });

    it('keeps working after rejecting', async () => {
      const result = await executor.forward(good);
      expect(result.logits!.length).toBe(2 * golden.config.vocabSize);
      expect(Array.from(result.tokens)).toEqual([-1, -1]);
    });

    it('runs a step that samples no rows (a prefill chunk that emits nothing)', async () => {
      const result = await executor.forward({ ...good, sampleRows: new Int32Array(0) });
      expect(result.tokens.length).toBe(0);
      expect(result.logits).toBeUndefined();
    });

    it('rejects load specs it cannot honour', async () => {
      const backend = createCpuBackend({ numThreads: 1 });
      const spec = {
        modelDir: model!.dir,
        config: golden.config,
        loadFormat: 'safetensors' as const,
        maxBatchSeqs: 1,
      };
      await expectInvalid(backend.loadModel({ ...spec, maxBatchTokens: 0 }), /maxBatchTokens/);
      await expectInvalid(
        backend.loadModel({ ...spec, maxBatchTokens: 4, maxKvTokens: 8, backendOptions: { simd: 'sse9' } }),
        /simd/,
      );
      const missing = await backend
        .loadModel({ ...spec, modelDir: '/nonexistent', maxBatchTokens: 4, maxKvTokens: 8 })
        .catch((error: unknown) => error);
      expect(missing).toBeInstanceOf(FerrumError);
    });

    it('rejects use after dispose, and dispose is idempotent', async () => {
      const disposable = await loadTinyModel(model!.dir, golden.config, {
        maxKvTokens: 16,
        swapSpaceTokens: 0,
      });
      await disposable.dispose();
      await disposable.dispose();
      await expectInvalid(
        disposable.forward(buildBatch([{ tokens: [1], kvSlots: range(0, 1), sample: 'last' }])),
        /disposed/,
      );
      await expectInvalid(disposable.kv.copySlots(Int32Array.of(0), Int32Array.of(1)), /disposed/);
    });
  },
);
