import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, maxAbsDiff, range, valueRange } from '@ferrum/models/testing';
import type { DType, ModelConfig } from '@ferrum/types';
import { afterEach, describe, expect, it } from 'vitest';
import { type CpuModelExecutor, createCpuBackend } from '../src/index.js';
import { BF16_PRODUCT_PATHS, type CpuSimdPath, loadNativeAddon } from '../src/native-addon.js';

const addon = loadNativeAddon();
const probe = addon.ok ? addon.addon.probe() : undefined;
const bf16Paths = (probe?.usableSimd ?? []).filter((simd) => BF16_PRODUCT_PATHS.includes(simd));

/**
 * Every k a multiple of 32 (AMX's tiles), but rows that end in part of a 16-row tile: the vocabulary (300) and
 * the KV projections (2 heads × 24).
 */
const config: ModelConfig = {
  architecture: 'qwen3',
  vocabSize: 300,
  hiddenSize: 64,
  intermediateSize: 160,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 24,
  rmsNormEps: 1e-6,
  rope: { type: 'default', theta: 10_000 },
  attentionBias: false,
  qkNorm: true,
  tieWordEmbeddings: false,
  maxPositionEmbeddings: 256,
  bosTokenId: null,
  eosTokenIds: [2],
  dtype: 'bf16',
};
/** k of 48, 40 and 72: whole 32-element vectors nowhere. */
const oddConfig: ModelConfig = { ...config, hiddenSize: 48, headDim: 10, intermediateSize: 72 };

const PROMPTS = [
  [1, 17, 250, 3, 99, 4, 8, 15, 16, 23, 42, 108, 7, 9, 11, 13, 200, 201, 202, 31],
  [5, 6, 7],
];

describe.skipIf(!addon.ok)(`bf16 products on the CPU${addon.ok ? '' : ` (skipped: ${addon.reason})`}`, () => {
  const loaded: ModelExecutor[] = [];
  afterEach(async () => {
    await Promise.all(loaded.splice(0).map((executor) => executor.dispose()));
  });

  async function load(shape: ModelConfig, options: { simd?: CpuSimdPath; dtype?: DType }) {
    const executor = (await createCpuBackend({ numThreads: 3 }).loadModel({
      modelDir: '/nonexistent',
      config: shape,
      loadFormat: 'dummy',
      dtype: options.dtype,
      seed: 5,
      maxBatchTokens: 64,
      maxBatchSeqs: 4,
      maxKvTokens: 200,
      backendOptions: options.simd ? { simd: options.simd } : {},
    })) as CpuModelExecutor;
    loaded.push(executor);
    return executor;
  }

  /** Each prompt's rows prefilled alone, then all prompts in one step, then the first one token at a time. */
  async function logitsOf(executor: ModelExecutor) {
    const alone: Float32Array[] = [];
    for (const prompt of PROMPTS) {
      const { logits } = await executor.forward(
        buildBatch([{ tokens: prompt, kvSlots: range(0, prompt.length), sample: 'all' }]),
      );
      alone.push(logits!);
    }
    let base = 0;
    const together = await executor.forward(
      buildBatch(
        PROMPTS.map((prompt) => {
          const slots = range(base + 50, prompt.length);
          base += 50;
          return { tokens: prompt, kvSlots: slots, sample: 'all' as const };
        }),
      ),
    );
    const first = PROMPTS[0];
    const decoded = new Float32Array(first.length * executor.info.config.vocabSize);
    for (let i = 0; i < first.length; i++) {
      const { logits } = await executor.forward(
        buildBatch([{ tokens: [first[i]], kvSlots: range(150, i + 1), sample: 'last' }]),
      );
      decoded.set(logits!, i * executor.info.config.vocabSize);
    }
    return { alone, together: together.logits!, decoded };
  }

  it('runs bf16 weights on the best bf16-product path for the bf16 compute dtype, on the f32 one otherwise', async () => {
    expect((await load(config, { dtype: 'bf16' })).description.simd).toBe(probe!.bf16Simd);
    expect((await load(config, {})).description.simd).toBe(probe!.simd);
    expect((await load(config, { dtype: 'f32' })).description.simd).toBe(probe!.simd);
    expect(BF16_PRODUCT_PATHS.includes(probe!.simd)).toBe(false);
    if (bf16Paths.length > 0) expect(probe!.bf16Simd).toBe(bf16Paths[0]);
    else expect(probe!.bf16Simd).toBe(probe!.simd);
  });

  it.skipIf(bf16Paths.length === 0).each([
    ['k in whole vectors, rows ending in part of a tile', config],
    ['k in no whole vector', oddConfig],
  ] as const)(
    `%s: every bf16 path (${bf16Paths.join(', ') || 'none on this CPU: skipped'}) stays within bf16 tolerance of the f32 products, and exact whatever the batch`,
    async (_, shape) => {
      const reference = await logitsOf(await load(shape, { simd: probe!.simd }));
      const spread = Math.max(...reference.alone.map(valueRange));
      const results: { simd: CpuSimdPath; alone: Float32Array[] }[] = [];
      for (const simd of bf16Paths) {
        if (simd === 'amx' && shape === oddConfig) continue; // refused: see below
        const got = await logitsOf(await load(shape, { simd }));
        let offset = 0;
        for (let p = 0; p < PROMPTS.length; p++) {
          const error = maxAbsDiff(got.alone[p], reference.alone[p]);
          expect(error, `${simd}, prompt ${p} against f32 products`).toBeLessThanOrEqual(5e-3 * spread);
          // Rounding x to bf16 shows: these are not the f32 products.
          expect(error, `${simd}, prompt ${p}`).toBeGreaterThan(0);
          expect(got.together.subarray(offset, offset + got.alone[p].length)).toEqual(got.alone[p]);
          offset += got.alone[p].length;
        }
        expect(got.decoded).toEqual(got.alone[0]);
        results.push({ simd, alone: got.alone });
      }
      // Two bf16 paths multiply the same bf16 values and differ only in the order of their f32 sums.
      for (let i = 1; i < results.length; i++) {
        for (let p = 0; p < PROMPTS.length; p++) {
          expect(
            maxAbsDiff(results[i].alone[p], results[0].alone[p]),
            `${results[i].simd} against ${results[0].simd}`,
          ).toBeLessThanOrEqual(1e-3 * spread);
        }
      }
    },
  );

  it.skipIf(!bf16Paths.includes('amx'))(
    `refuses AMX for k not in whole tiles, and leaves it out of the default choice${bf16Paths.includes('amx') ? '' : ' (skipped: no AMX on this CPU)'}`,
    async () => {
      await expect(load(oddConfig, { simd: 'amx' })).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringMatching(/multiples of 32/),
      });
      expect((await load(oddConfig, { dtype: 'bf16' })).description.simd).toBe('avx512bf16');
    },
  );
});
