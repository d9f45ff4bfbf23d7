import { createKvCacheManager } from '@ferrum/kv';
import { resolveSamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { createScheduler } from '../src/index.js';
import { referenceOutput } from './support/fake-runtime.js';
import { prompt, setup } from './support/setup.js';

const code = (c: string) => expect.objectContaining({ code: c });

describe('add', () => {
  it('refuses prompts over maxModelLen, a full queue, bad n and ids in use', () => {
    const { scheduler, harness } = setup({ numSlots: 64, maxModelLen: 32, maxQueueSize: 2, maxNumSeqs: 4 });
    expect(() => harness.add({ requestId: 'long', prompt: prompt(33) })).toThrow(
      code('context_length_exceeded'),
    );
    expect(() => harness.add({ requestId: 'empty', prompt: [] })).toThrow(code('invalid_argument'));
    expect(() => harness.add({ requestId: 'n0', prompt: prompt(4), sampling: { n: 0 } })).toThrow(
      code('invalid_argument'),
    );
    expect(() => harness.add({ requestId: 'n5', prompt: prompt(4), sampling: { n: 5 } })).toThrow(
      code('invalid_argument'),
    );
    harness.add({ requestId: 'a', prompt: prompt(4), sampling: { maxTokens: 2 } });
    expect(() => harness.add({ requestId: 'a', prompt: prompt(4) })).toThrow(code('invalid_argument'));
    harness.add({ requestId: 'b', prompt: prompt(4), sampling: { maxTokens: 2 } });
    expect(() => harness.add({ requestId: 'c', prompt: prompt(4) })).toThrow(code('queue_full'));
    harness.step(); // admits both: the queue has room again
    harness.add({ requestId: 'c', prompt: prompt(4), sampling: { maxTokens: 2, ignoreEos: true } });
    harness.drain();
    // An ended request's id can be used again.
    harness.add({ requestId: 'a', prompt: prompt(4), sampling: { maxTokens: 2 } });
    expect(scheduler.stateOf('a')).toBe('waiting');
  });

  it('rejects options it cannot honour', () => {
    const kv = createKvCacheManager({ numSlots: 64 });
    const base = { maxNumSeqs: 8, maxNumBatchedTokens: 32, maxModelLen: 64 };
    expect(() => createScheduler({ ...base, maxNumBatchedTokens: 4 }, kv)).toThrow(code('invalid_argument'));
    expect(() => createScheduler({ ...base, maxModelLen: 65 }, kv)).toThrow(code('invalid_argument'));
    expect(() => createScheduler({ ...base, watermark: 1 }, kv)).toThrow(code('invalid_argument'));
    expect(() => createScheduler({ ...base, chunkedPrefill: false }, kv)).toThrow(code('invalid_argument'));
    expect(() => createScheduler({ ...base, maxNumBatchedKvTokens: 10 }, kv)).toThrow(
      code('invalid_argument'),
    );
    expect(createScheduler(base, kv).specificationVersion).toBe('v1');
  });

  it('draws distinct seeds for unseeded requests, the same ones for the same scheduler seed', () => {
    const seedsOf = () => {
      const { harness } = setup({ numSlots: 64, seed: 5 });
      const seeds: number[] = [];
      for (const id of ['a', 'b', 'c'])
        harness.add({ requestId: id, prompt: prompt(3), sampling: { maxTokens: 1 } });
      harness.step((step) => seeds.push(...step.batch.sampling!.map((row) => row.seed)));
      return seeds;
    };
    const seeds = seedsOf();
    expect(new Set(seeds).size).toBe(3);
    expect(seedsOf()).toEqual(seeds);
  });

  it('passes the request id and needsHostLogits to the sampled rows', () => {
    const { scheduler, harness } = setup({ numSlots: 64 });
    scheduler.add({
      requestId: 'h',
      promptTokenIds: Int32Array.from(prompt(3)),
      sampling: resolveSamplingParams({ maxTokens: 1 }),
      priority: 0,
      arrivalTimeMs: 0,
      eosTokenIds: [],
      needsHostLogits: true,
    });
    harness.requests.set('h', { requestId: 'h', promptTokenIds: Int32Array.from(prompt(3)) } as never);
    const step = scheduler.schedule()!;
    expect(step.batch.sampling![0]).toMatchObject({ requestId: 'h', needsHostLogits: true });
  });
});

describe('admission and priority', () => {
  it('admits waiting requests in priority order, then by arrival', () => {
    const { harness } = setup({ numSlots: 64, maxNumSeqs: 1 });
    const order: string[] = [];
    harness.add({ requestId: 'late-low', prompt: prompt(3), priority: 2, sampling: { maxTokens: 1 } });
    harness.add({ requestId: 'high', prompt: prompt(3), priority: 0, sampling: { maxTokens: 1 } });
    harness.add({ requestId: 'mid-1', prompt: prompt(3), priority: 1, sampling: { maxTokens: 1 } });
    harness.add({ requestId: 'mid-2', prompt: prompt(3), priority: 1, sampling: { maxTokens: 1 } });
    harness.drain((step) => order.push(...step.seqIds));
    expect(order).toEqual(['high', 'mid-1', 'mid-2', 'late-low']);
  });

  it('lets a better-priority arrival preempt the worst, newest running request', () => {
    const { scheduler, kv, harness } = setup({ numSlots: 48, maxNumBatchedTokens: 32 });
    const running = [
      ['p1', 1],
      ['p5-old', 5],
      ['p5-new', 5],
    ] as const;
    running.forEach(([id, priority], i) => {
      harness.add({
        requestId: id,
        prompt: prompt(12, i),
        priority,
        sampling: { maxTokens: 30, ignoreEos: true },
      });
    });
    harness.step();
    harness.step();
    expect(kv.numAvailableSlots()).toBeLessThan(12);
    harness.add({
      requestId: 'urgent',
      prompt: prompt(12, 9),
      priority: 0,
      sampling: { maxTokens: 3, ignoreEos: true },
    });
    harness.step((step) => {
      expect(step.preempted).toEqual(['p5-new']);
      expect(step.seqIds).toEqual(['p1', 'p5-old', 'urgent']);
    });
    expect(scheduler.stateOf('urgent')).toBe('decoding');
    harness.drain();
    expect(harness.ends.get('urgent')).toBe('length');
  });

  it('never preempts running work for a waiting request of equal priority (FCFS)', () => {
    const { scheduler, harness } = setup({ numSlots: 48, maxNumBatchedTokens: 32 });
    for (const id of ['a', 'b', 'c']) {
      harness.add({
        requestId: id,
        prompt: prompt(12, id.charCodeAt(0)),
        sampling: { maxTokens: 4, ignoreEos: true },
      });
    }
    harness.step();
    harness.add({ requestId: 'd', prompt: prompt(12, 4), sampling: { maxTokens: 4, ignoreEos: true } });
    harness.step((step) => expect(step.preempted).toEqual([]));
    expect(scheduler.stateOf('d')).toBe('waiting');
    harness.drain();
    expect(scheduler.stats().numPreemptions).toBe(0);
  });

  it('keeps the watermark free when admitting, but not when nothing runs', () => {
    const { scheduler, harness } = setup({
      numSlots: 100,
      maxNumBatchedTokens: 64,
      maxModelLen: 100,
      watermark: 0.1,
    });
    harness.add({ requestId: 'big', prompt: prompt(95), sampling: { maxTokens: 5, ignoreEos: true } });
    harness.step(); // alone: 64 tokens, no watermark
    harness.step(); // 31 more: the prompt is in
    harness.add({ requestId: 'small', prompt: prompt(2), sampling: { maxTokens: 1 } });
    harness.step(); // 96 of 100 slots used: 2 + 10 does not fit
    expect(scheduler.stateOf('small')).toBe('waiting');
    harness.drain();
    expect(harness.outputsOf('small')).toHaveLength(1);
  });

  it('counts the forks of an n > 1 request against maxNumSeqs from its admission', () => {
    const { scheduler, harness } = setup({ numSlots: 64, maxNumSeqs: 4 });
    harness.add({ requestId: 'three', prompt: prompt(5), sampling: { n: 3, maxTokens: 3, ignoreEos: true } });
    harness.add({
      requestId: 'two',
      prompt: prompt(5, 2),
      sampling: { n: 2, maxTokens: 3, ignoreEos: true },
    });
    harness.step();
    expect(scheduler.stateOf('two')).toBe('waiting');
    harness.drain(() => expect(scheduler.stats().numRunning).toBeLessThanOrEqual(4));
    for (const id of ['three#0', 'three#1', 'three#2', 'two#0', 'two#1'])
      expect(harness.ends.get(id)).toBe('length');
  });
});

describe('step shape', () => {
  it('runs every decode each step while a long prompt is prefilled in chunks after them', () => {
    const { harness } = setup({ numSlots: 128, maxNumBatchedTokens: 16, maxNumSeqs: 4 });
    harness.add({ requestId: 'd1', prompt: prompt(4, 1), sampling: { maxTokens: 20, ignoreEos: true } });
    harness.add({ requestId: 'd2', prompt: prompt(4, 2), sampling: { maxTokens: 20, ignoreEos: true } });
    harness.step();
    harness.add({ requestId: 'long', prompt: prompt(50, 3), sampling: { maxTokens: 1 } });
    const shapes: [string[], number][] = [];
    for (let i = 0; i < 4; i++) harness.step((step) => shapes.push([[...step.seqIds], step.batch.numTokens]));
    // 14 prompt tokens fit beside the two decodes: 14 + 14 + 14 + 8.
    expect(shapes).toEqual([
      [['d1', 'd2', 'long'], 16],
      [['d1', 'd2', 'long'], 16],
      [['d1', 'd2', 'long'], 16],
      [['d1', 'd2', 'long'], 10],
    ]);
    expect(harness.outputsOf('long')).toHaveLength(1);
  });

  it('prefills a prompt in one step without chunked prefill, waiting until it fits whole', () => {
    const { harness } = setup({
      numSlots: 256,
      maxNumBatchedTokens: 64,
      maxModelLen: 64,
      chunkedPrefill: false,
    });
    harness.add({ requestId: 'd', prompt: prompt(4), sampling: { maxTokens: 3, ignoreEos: true } });
    harness.step();
    harness.add({ requestId: 'fits', prompt: prompt(50, 2), sampling: { maxTokens: 1 } });
    harness.add({ requestId: 'whole', prompt: prompt(63, 3), sampling: { maxTokens: 1 } });
    const rows: Record<string, number[]> = { fits: [], whole: [] };
    harness.drain((step) => {
      step.seqIds.forEach((id, b) => {
        rows[id]?.push(step.batch.qIndptr[b + 1] - step.batch.qIndptr[b]);
      });
    });
    expect(rows).toEqual({ fits: [50], whole: [63] });
  });

  it('skips the cached prefix of a prompt, from finished and from running sequences', () => {
    const { kv, harness } = setup({ numSlots: 256, maxNumBatchedTokens: 64 });
    const shared = prompt(24, 1);
    const a = [...shared, ...prompt(6, 2)];
    harness.add({ requestId: 'a', prompt: a, sampling: { maxTokens: 8, ignoreEos: true, seed: 1 } });
    harness.step();
    // 'a' is decoding; its prompt is committed, so 'b' (same 24-token prefix) computes only its own 6.
    const b = [...shared, ...prompt(6, 3)];
    harness.add({ requestId: 'b', prompt: b, sampling: { maxTokens: 8, ignoreEos: true, seed: 2 } });
    harness.step((step) => {
      const i = step.seqIds.indexOf('b');
      expect(step.batch.qIndptr[i + 1] - step.batch.qIndptr[i]).toBe(6);
      expect(step.batch.positions[step.batch.qIndptr[i]]).toBe(24);
    });
    harness.drain();
    // 'c' repeats 'a' whole: all but its last prompt token are cached.
    harness.add({ requestId: 'c', prompt: a, sampling: { maxTokens: 8, ignoreEos: true, seed: 1 } });
    harness.step((step) => expect(step.batch.numTokens).toBe(1));
    harness.drain();
    const limits = { maxTokens: 8, minTokens: 0, maxModelLen: 128, stopTokenIds: [] };
    expect(harness.outputsOf('b')).toEqual(referenceOutput(b, 2, limits).tokens);
    expect(harness.outputsOf('c')).toEqual(harness.outputsOf('a'));
    expect(kv.stats().prefixHitTokens).toBe(24 + 29);
  });
});

describe('step protocol', () => {
  it('allows one step in flight, unless all of its sequences ended', () => {
    const { scheduler, harness } = setup({ numSlots: 64 });
    harness.add({ requestId: 'a', prompt: prompt(4), sampling: { maxTokens: 4 } });
    const step = scheduler.schedule()!;
    expect(() => scheduler.schedule()).toThrow(code('invalid_argument'));
    expect(() => scheduler.complete({ ...step }, new Int32Array(1))).toThrow(code('invalid_argument'));
    expect(() => scheduler.complete(step, new Int32Array(0))).toThrow(code('invalid_argument'));
    // After a failed forward the engine aborts the step's requests and carries on.
    harness.abort('a');
    expect(scheduler.schedule()).toBeNull();
    harness.add({ requestId: 'b', prompt: prompt(4), sampling: { maxTokens: 2, ignoreEos: true } });
    harness.drain();
    expect(harness.ends.get('b')).toBe('length');
  });

  it('ignores sequences aborted or finished while their step ran', () => {
    const { scheduler, kv, harness } = setup({ numSlots: 64 });
    harness.add({ requestId: 'a', prompt: prompt(4), sampling: { maxTokens: 9, ignoreEos: true } });
    harness.add({ requestId: 'b', prompt: prompt(4, 2), sampling: { n: 2, maxTokens: 9, ignoreEos: true } });
    const step = scheduler.schedule()!;
    scheduler.abort('a');
    scheduler.finish('b#1', 'stop');
    const updates = scheduler.complete(step, new Int32Array(step.batch.sampleRows.length).fill(3));
    expect(updates.map((u) => u.seqId)).toEqual(['b#0']);
    expect(scheduler.stateOf('b#1')).toBe('finished');
    scheduler.finish('b#0', 'stop');
    kv.checkIntegrity();
    expect(kv.stats().numUsedSlots).toBe(0);
    expect(scheduler.hasWork()).toBe(false);
  });
});
