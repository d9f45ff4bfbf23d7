import { createKvCacheManager } from '@ferrum/kv';
import { resolveSamplingParams } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { createScheduler } from '../src/index.js';
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
