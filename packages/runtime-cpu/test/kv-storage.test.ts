import type { ModelExecutor } from '@ferrum/interfaces';
import { buildBatch, type Golden, maxAbsDiff, range, readGolden } from '@ferrum/models/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNativeAddon } from '../src/native-addon.js';
import { allTinyModels } from './fixtures.js';
import { loadTinyModel } from './load-fixture.js';

const addon = loadNativeAddon();
const model = allTinyModels()[0];
const DECODE_STEPS = 6;

/**
 * Decodes `tokens` one step at a time after `slots` (the cached KV of the sequence so far), writing new
 * tokens to `nextSlots`, and returns each step's logits.
 */
async function decode(executor: ModelExecutor, slots: number[], tokens: number[], nextSlots: number[]) {
  const kv = [...slots];
  const out: Float32Array[] = [];
  for (const [i, token] of tokens.entries()) {
    kv.push(nextSlots[i]);
    out.push(
      (await executor.forward(buildBatch([{ tokens: [token], kvSlots: kv, sample: 'last' }]))).logits!,
    );
  }
  return out;
}

describe.skipIf(!addon.ok || model === undefined)(`KvStorage on ${model?.label}`, () => {
  let golden: Golden;
  let executor: ModelExecutor;
  let prompt: number[];
  let continuation: number[];
  let reference: Float32Array[];
  beforeAll(async () => {
    golden = await readGolden(model!.dir);
    executor = await loadTinyModel(model!.dir, golden.config, { maxKvTokens: 512, swapSpaceTokens: 128 });
    prompt = golden.prompts[3];
    continuation = golden.greedy[3].slice(0, DECODE_STEPS);
    // Uninterrupted: prefill at [0, n), decode into [n, n + steps).
    await executor.forward(
      buildBatch([{ tokens: prompt, kvSlots: range(0, prompt.length), sample: 'last' }]),
    );
    reference = await decode(
      executor,
      range(0, prompt.length),
      continuation,
      range(prompt.length, DECODE_STEPS),
    );
  });
  afterAll(() => executor?.dispose());

  /** Other tokens of the given length, to overwrite a sequence's slots with different KV. */
  const intruder = (length: number) => golden.prompts[2].concat(golden.prompts[3]).slice(0, length);

  it('reports its pool sizes', () => {
    expect(executor.kv.numSlots).toBe(512);
    expect(executor.kv.numHostSlots).toBe(128);
    expect(executor.info.numKvSlots).toBe(512);
  });

  it('swaps a sequence out, lets another overwrite its slots, and swaps it back into different slots', async () => {
    const n = prompt.length;
    const cached = range(0, n + 2);
    await executor.forward(buildBatch([{ tokens: prompt, kvSlots: range(0, n), sample: 'last' }]));
    const head = await decode(executor, range(0, n), continuation.slice(0, 2), [n, n + 1]);
    const host = range(10, n + 2);
    // Not awaited on purpose: KV transfers and steps must run in call order.
    const swappedOut = executor.kv.swapOut(Int32Array.from(cached), Int32Array.from(host));
    const overwritten = executor.forward(
      buildBatch([{ tokens: intruder(n + 2), kvSlots: cached, sample: 'last' }]),
    );
    const moved = range(200, n + 2);
    const swappedIn = executor.kv.swapIn(Int32Array.from(host), Int32Array.from(moved));
    await Promise.all([swappedOut, overwritten, swappedIn]);
    const tail = await decode(executor, moved, continuation.slice(2), range(200 + n + 2, DECODE_STEPS - 2));
    for (const [i, logits] of [...head, ...tail].entries()) {
      expect(maxAbsDiff(logits, reference[i]), `decode step ${i}`).toBeLessThanOrEqual(1e-5);
    }
  });

  it('copies a sequence to other slots and continues decoding from the copy', async () => {
    const n = prompt.length;
    await executor.forward(buildBatch([{ tokens: prompt, kvSlots: range(0, n), sample: 'last' }]));
    await executor.kv.copySlots(Int32Array.from(range(0, n)), Int32Array.from(range(400, n)));
    // Clobber the originals so only the copy can produce the right answer.
    await executor.forward(buildBatch([{ tokens: intruder(n), kvSlots: range(0, n), sample: 'last' }]));
    const copied = await decode(executor, range(400, n), continuation, range(400 + n, DECODE_STEPS));
    for (const [i, logits] of copied.entries()) {
      expect(maxAbsDiff(logits, reference[i]), `decode step ${i}`).toBeLessThanOrEqual(1e-5);
    }
  });
});
