import type { ComputeBackend } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import type { SamplingParams } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collected } from './collect.js';
import {
  comparable,
  createRig,
  expectCleanEnd,
  MODES,
  type Mode,
  type Rig,
  runAll,
  type TestRequest,
} from './early-launch-rig.js';
import { readGolden } from './fixture-models.js';

// Early launch: with async scheduling on a runtime that takes placeholders on the device
// (`previousTokens`), step N + 1 goes to the runtime before step N's tokens reach the host. Every case runs
// three loops: early (the runtime's capability kept), late (capability hidden: N + 1 launched after
// complete(N)) and plain (no async scheduling), and they must stream the same.
const golden = readGolden('qwen3-qknorm');

const greedy = { temperature: 0, maxTokens: 24, ignoreEos: true } satisfies Partial<SamplingParams>;

describe('early launch on the CPU runtime (greedy rows sampled natively)', () => {
  const rigs = {} as Record<Mode, Rig>;
  beforeAll(async () => {
    for (const mode of MODES) rigs[mode] = await createRig(mode);
  });
  afterAll(async () => {
    for (const rig of Object.values(rigs)) await rig.engine.shutdown();
  });

  /** Run `requests` on the three loops: the same chunks, clean ends; returns the early loop's outputs. */
  async function compareModes(requests: readonly TestRequest[]): Promise<Collected[]> {
    const outs = await Promise.all(Object.values(rigs).map((rig) => runAll(rig.engine, requests)));
    expect(outs[0].map(comparable)).toEqual(outs[2].map(comparable));
    expect(outs[1].map(comparable)).toEqual(outs[2].map(comparable));
    for (const [i, rig] of Object.values(rigs).entries()) expectCleanEnd(rig, outs[i]);
    return outs[0];
  }

  it('streams what the late and plain loops stream, launching steps early', async () => {
    const before = { ...rigs.early.spy.overlap };
    const requests: TestRequest[] = golden.prompts.map((prompt, i) => ({
      prompt: { tokenIds: prompt },
      // Odd requests stop at the first occurrence of their sixth greedy token; lengths vary.
      sampling:
        i % 2 === 1
          ? { ...greedy, stopTokenIds: [golden.greedy[i][5]] }
          : { ...greedy, maxTokens: 4 + 5 * i },
    }));
    requests.push({ prompt: { text: 'Once upon a time' }, sampling: { ...greedy, logprobs: 0 } });

    const outs = await compareModes(requests);
    outs.slice(0, golden.prompts.length).forEach((out, i) => {
      const expected = golden.greedy[i];
      const end = i % 2 === 1 ? expected.indexOf(expected[5]) + 1 : 4 + 5 * i;
      expect(out.tokens[0], `prompt ${i}`).toEqual(expected.slice(0, end));
    });
    expect(rigs.early.spy.overlap.early).toBeGreaterThan(before.early);
    expect(rigs.early.spy.overlap.previousTokens).toBeGreaterThan(before.previousTokens);
    expect(rigs.late.spy.overlap.early).toBe(0);
    expect(rigs.plain.spy.overlap.early).toBe(0);
  });

  it('a row sampled on the host is no placeholder source, though the next row is sampled natively', async () => {
    // The CPU runtime samples a greedy row natively only once `minTokens` is reached: here the first three
    // tokens on the host, then natively. The step after the switch takes its placeholder after complete(); the
    // ones after that, early.
    const before = rigs.early.spy.overlap.early;
    const [out] = await compareModes([
      { prompt: { tokenIds: golden.prompts[1] }, sampling: { ...greedy, minTokens: 3, maxTokens: 10 } },
    ]);
    expect(out.tokens[0]).toHaveLength(10);
    expect(rigs.early.spy.overlap.early - before).toBe(10 - 4);
  });

  it('sequences ending while their next step runs: stop id, stop string, length, abort', async () => {
    const prompt = { text: 'Once upon a time there was' };
    const [full] = await runAll(rigs.plain.engine, [{ prompt, sampling: greedy }]);
    const stop = full.texts[0].slice(10, 13);
    const requests: TestRequest[] = [
      { prompt, sampling: { ...greedy, stop: [stop] } },
      {
        prompt: { tokenIds: golden.prompts[0] },
        sampling: { ...greedy, stopTokenIds: [golden.greedy[0][3]] },
      },
      { prompt: { tokenIds: golden.prompts[1] }, sampling: { ...greedy, maxTokens: 2 } },
      { prompt: { tokenIds: golden.prompts[2] }, sampling: greedy, abortAfter: 3 },
      { prompt: { tokenIds: golden.prompts[3] }, sampling: greedy, abortAfter: 1 },
    ];
    const numForwards = { early: rigs.early.spy.steps.length, plain: rigs.plain.spy.steps.length };
    const [early, plain] = await Promise.all([
      runAll(rigs.early.engine, requests),
      runAll(rigs.plain.engine, requests),
    ]);
    expectCleanEnd(rigs.early, early);
    expectCleanEnd(rigs.plain, plain);
    expect(early[0].texts[0]).toBe(full.texts[0].slice(0, full.texts[0].indexOf(stop)));
    expect(early[0].finishReasons[0]).toBe('stop');
    expect(early[1].tokens[0]).toEqual(
      golden.greedy[0].slice(0, golden.greedy[0].indexOf(golden.greedy[0][3]) + 1),
    );
    expect(early[2].tokens[0]).toEqual(golden.greedy[1].slice(0, 2));
    for (const i of [3, 4]) {
      expect(early[i].finishReasons[0]).toBe('abort');
      expect(golden.greedy[i - 1].slice(0, early[i].tokens[0].length)).toEqual(early[i].tokens[0]);
    }
    expect(comparable(early[0])).toEqual(comparable(plain[0]));
    expect(comparable(early[1])).toEqual(comparable(plain[1]));
    expect(rigs.early.spy.steps.length - numForwards.early).toBeGreaterThan(0);
    expect(rigs.plain.spy.steps.length - numForwards.plain).toBeGreaterThan(0);
  });

  it('a request alone that stops: the step launched before the stop was known is its only extra forward', async () => {
    const stopAt = golden.greedy[1].indexOf(golden.greedy[1][5]) + 1;
    const request: TestRequest = {
      prompt: { tokenIds: golden.prompts[1] },
      sampling: { ...greedy, stopTokenIds: [golden.greedy[1][5]] },
    };
    const counts = await Promise.all(
      Object.values(rigs).map(async (rig) => {
        const before = rig.spy.steps.length;
        const [out] = await runAll(rig.engine, [request]);
        expect(out.tokens[0]).toEqual(golden.greedy[1].slice(0, stopAt));
        expectCleanEnd(rig, [out]);
        return rig.spy.steps.length - before;
      }),
    );
    // A prefill and one decode per later token; early launch adds the step planned while the last ran.
    expect(counts).toEqual([stopAt + 1, stopAt, stopAt]);
  });

  it('a step that fails while the next was launched early fails its requests once; the engine serves on', async () => {
    const cpu = createCpuBackend();
    let numForwards = 0;
    // The fourth forward carries a KV index outside the pool: the runtime refuses it when it runs.
    const failing: ComputeBackend = {
      specificationVersion: 'v1',
      name: 'cpu',
      probe: () => cpu.probe(),
      async loadModel(spec) {
        const inner = await cpu.loadModel(spec);
        return {
          info: inner.info,
          kv: inner.kv,
          forward: (batch) =>
            inner.forward(
              ++numForwards === 4 ? { ...batch, kvIndices: batch.kvIndices.map(() => 1e9) } : batch,
            ),
          dispose: () => inner.dispose(),
        };
      },
    };
    const rig = await createRig('early', { inner: failing });
    const failed = await Promise.allSettled(
      golden.prompts
        .slice(0, 2)
        .map((prompt) => runAll(rig.engine, [{ prompt: { tokenIds: prompt }, sampling: greedy }])),
    );
    for (const outcome of failed) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_argument' });
    }
    // The fifth forward was launched before the fourth failed, and was refused after it.
    expect(rig.spy.overlap.early).toBeGreaterThanOrEqual(4);
    expect(numForwards).toBe(5);
    const [out] = await runAll(rig.engine, [{ prompt: { tokenIds: golden.prompts[0] }, sampling: greedy }]);
    expect(out.tokens[0]).toEqual(golden.greedy[0]);
    expectCleanEnd(rig, [out]);
    await rig.engine.shutdown();
  });
});
