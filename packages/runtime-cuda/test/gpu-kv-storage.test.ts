import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, type Golden, maxAbsDiff, range, readGolden } from '@ferrum/models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cudaAvailability, loadCuda, tinyModels } from './support.js';

const { available, reason } = await cudaAvailability();
const model = tinyModels().find((m) => m.label.endsWith('qwen3-qknorm'));

describe.skipIf(!available || !model)(
  `cuda: KV storage primitives${available ? '' : ` (skipped: ${reason})`}`,
  () => {
    let golden: Golden;
    let executor: ModelExecutor;
    let prompt: number[];
    /** Logits of decoding `next` after the prompt cached at `slots`. */
    const decodeAfter = async (slots: number[], next: number, newSlot: number) => {
      const { logits } = await executor.forward(
        buildBatch([{ tokens: [next], kvSlots: [...slots, newSlot], sample: 'last' }]),
      );
      return logits!;
    };

    beforeAll(async () => {
      golden = await readGolden(model!.dir);
      executor = await loadCuda(model!.dir, golden.config);
      prompt = golden.prompts[golden.prompts.length - 1];
    });
    afterAll(() => executor?.dispose());

    const prefill = (tokens: number[], slots: number[]) =>
      executor.forward(buildBatch([{ tokens, kvSlots: slots, sample: 'last' }]));

    it('reports its pool sizes', () => {
      expect(executor.kv.numSlots).toBe(4096);
      expect(executor.kv.numHostSlots).toBe(1024);
    });

    it('copySlots moves a cached prefix so that decoding from the copy gives the same logits', async () => {
      const source = range(0, prompt.length);
      await prefill(prompt, source);
      const reference = await decodeAfter(source, 7, 100);
      const copy = range(200, prompt.length);
      await executor.kv.copySlots(Int32Array.from(source), Int32Array.from(copy));
      expect(maxAbsDiff(await decodeAfter(copy, 7, 300), reference)).toBe(0);
    });

    it('swapOut then swapIn restores the prefix after its device slots were overwritten', async () => {
      const source = range(400, prompt.length);
      await prefill(prompt, source);
      const reference = await decodeAfter(source, 9, 500);
      const host = range(10, prompt.length);
      await executor.kv.swapOut(Int32Array.from(source), Int32Array.from(host));
      const other = golden.prompts[2];
      await prefill(other.concat(other).slice(0, prompt.length), source); // clobber the device copy
      const back = range(600, prompt.length);
      await executor.kv.swapIn(Int32Array.from(host), Int32Array.from(back));
      expect(maxAbsDiff(await decodeAfter(back, 9, 700), reference)).toBe(0);
    });

    it('rejects slots outside the pools with invalid_argument', async () => {
      await expect(executor.kv.copySlots(Int32Array.of(0), Int32Array.of(4096))).rejects.toMatchObject({
        code: 'invalid_argument',
      });
      await expect(executor.kv.swapOut(Int32Array.of(0), Int32Array.of(1024))).rejects.toMatchObject({
        code: 'invalid_argument',
      });
    });

    it('rejects a batch whose slots are outside the pool', async () => {
      await expect(prefill([1, 2], [0, 5000])).rejects.toMatchObject({ code: 'invalid_argument' });
    });
  },
);
