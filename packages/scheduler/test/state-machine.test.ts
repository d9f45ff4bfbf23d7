import { describe, expect, it } from 'vitest';
import { FAKE_EOS, referenceOutput } from './support/fake-runtime.js';
import { type KvKind, prompt, setup } from './support/setup.js';

const KINDS: KvKind[] = ['radix', 'naive'];

function expectPoolWhole(kv: {
  checkIntegrity(): void;
  stats(): { numUsedSlots: number; numFreeHostSlots: number; numHostSlots: number };
}) {
  kv.checkIntegrity();
  const stats = kv.stats();
  expect(stats.numUsedSlots).toBe(0);
  expect(stats.numFreeHostSlots).toBe(stats.numHostSlots);
}

function reference(tokens: number[], seed: number, maxTokens: number, maxModelLen = 128) {
  return referenceOutput(tokens, seed, { maxTokens, minTokens: 0, maxModelLen, stopTokenIds: [] }).tokens;
}

describe.each(KINDS)('sequence states over the %s KV manager', (kind) => {
  it('goes waiting → prefilling → decoding → finished, with chunked prefill', () => {
    const { scheduler, kv, harness } = setup({
      kv: kind,
      numSlots: 64,
      maxNumBatchedTokens: 16,
      maxNumSeqs: 4,
    });
    const tokens = prompt(20);
    harness.add({ requestId: 'r', prompt: tokens, sampling: { maxTokens: 3, ignoreEos: true, seed: 7 } });
    expect(scheduler.stateOf('r')).toBe('waiting');
    expect(scheduler.stats()).toMatchObject({ numWaiting: 1, numRunning: 0 });

    // 20 prompt tokens under a 16-token budget: a 16-token chunk that samples nothing, then 4 that sample.
    expect(harness.step()).toEqual([
      { requestId: 'r', seqId: 'r', index: 0, tokenId: -1, sampleIndex: -1, numCachedPromptTokens: 0 },
    ]);
    expect(scheduler.stateOf('r')).toBe('prefilling');
    expect(kv.stats().numUsedSlots).toBe(16);
    const [first] = harness.step()!;
    expect(first).toMatchObject({ seqId: 'r', sampleIndex: 0 });
    expect(first.tokenId).toBeGreaterThanOrEqual(0);
    expect(scheduler.stateOf('r')).toBe('decoding');
    expect(kv.stats().numUsedSlots).toBe(20);
    harness.step();
    const [last] = harness.step()!;
    expect(last.finishReason).toBe('length');
    expect(scheduler.stateOf('r')).toBe('finished');
    expect(harness.trace.get('r')).toEqual(['waiting', 'prefilling', 'decoding', 'finished']);
    expect(harness.outputsOf('r')).toEqual(reference(tokens, 7, 3));
    expectPoolWhole(kv);
    // 20 prompt tokens and 2 of the 3 outputs were computed; the radix manager keeps them cached.
    expect(kv.stats().numCachedSlots).toBe(kind === 'radix' ? 22 : 0);
    expect(scheduler.schedule()).toBeNull();
    expect(scheduler.stateOf('r')).toBeUndefined();
    expect(scheduler.hasWork()).toBe(false);
  });

  it('preempts the newest sequence by recompute and resumes it', () => {
    const { scheduler, kv, harness } = setup({ kv: kind, numSlots: 40, maxNumBatchedTokens: 32 });
    const a = prompt(15, 1);
    const b = prompt(15, 2);
    harness.add({ requestId: 'a', prompt: a, sampling: { maxTokens: 20, ignoreEos: true, seed: 1 } });
    harness.add({ requestId: 'b', prompt: b, sampling: { maxTokens: 20, ignoreEos: true, seed: 2 } });
    // Step 1 prefills both (30 slots); each later step needs 2 more, so step 7 finds the pool dry.
    for (let i = 0; i < 6; i++) harness.step();
    expect(kv.stats().numUsedSlots).toBe(40);
    harness.step((step) => {
      expect(step.preempted).toEqual(['b']);
      expect(step.seqIds).toEqual(['a']);
      expect(scheduler.stateOf('b')).toBe('preempted');
      expect(scheduler.stats()).toMatchObject({
        numWaiting: 1,
        numRunning: 1,
        numSwapped: 0,
        numPreemptions: 1,
      });
      expect(() => kv.slotsOf('b')).toThrow();
      kv.checkIntegrity();
    });
    harness.drain();
    expect(harness.trace.get('b')).toEqual([
      'waiting',
      'prefilling',
      'decoding',
      'preempted',
      'prefilling',
      'decoding',
      'finished',
    ]);
    expect(harness.outputsOf('b')).toEqual(reference(b, 2, 20));
    expect(harness.outputsOf('a').slice(6)).toEqual(reference(a, 1, 20).slice(6));
    expectPoolWhole(kv);
  });

  it('preempts by swap and swaps back in without recomputing', () => {
    const { scheduler, kv, harness } = setup({
      kv: kind,
      numSlots: 40,
      numHostSlots: 64,
      maxNumBatchedTokens: 32,
      preemptionMode: 'swap',
    });
    const b = prompt(15, 2);
    harness.add({
      requestId: 'a',
      prompt: prompt(15, 1),
      sampling: { maxTokens: 20, ignoreEos: true, seed: 1 },
    });
    harness.add({ requestId: 'b', prompt: b, sampling: { maxTokens: 20, ignoreEos: true, seed: 2 } });
    for (let i = 0; i < 6; i++) harness.step();
    const slotsOfB = Array.from(kv.slotsOf('b'));
    harness.step((step) => {
      expect(step.preempted).toEqual(['b']);
      expect(step.swapOut).toHaveLength(1);
      expect(Array.from(step.swapOut[0].deviceSlots)).toEqual(slotsOfB);
      expect(scheduler.stats()).toMatchObject({ numWaiting: 0, numSwapped: 1 });
      expect(kv.stats().numFreeHostSlots).toBe(64 - slotsOfB.length);
    });
    let numSwapIns = 0;
    harness.drain((step) => {
      numSwapIns += step.swapIn.length;
    });
    expect(numSwapIns).toBe(1);
    expect(harness.trace.get('b')).toEqual([
      'waiting',
      'prefilling',
      'decoding',
      'preempted',
      'decoding',
      'finished',
    ]);
    expect(harness.outputsOf('b')).toEqual(reference(b, 2, 20));
    expectPoolWhole(kv);
  });

  it.each(['waiting', 'prefilling', 'decoding', 'recompute', 'swap'] as const)(
    'aborts a request that is %s and frees everything at once',
    (where) => {
      const swap = where === 'swap';
      const { scheduler, kv, harness } = setup({
        kv: kind,
        numSlots: 40,
        numHostSlots: 64,
        maxNumBatchedTokens: where === 'prefilling' ? 20 : 32,
        preemptionMode: swap ? 'swap' : 'recompute',
      });
      harness.add({ requestId: 'a', prompt: prompt(15, 1), sampling: { maxTokens: 20, ignoreEos: true } });
      harness.add({ requestId: 'b', prompt: prompt(15, 2), sampling: { maxTokens: 20, ignoreEos: true } });
      const steps = { waiting: 0, prefilling: 1, decoding: 2, recompute: 7, swap: 7 }[where];
      for (let i = 0; i < steps; i++) harness.step();
      const expected = { waiting: 'waiting', prefilling: 'prefilling', decoding: 'decoding' }[
        where as string
      ];
      expect(scheduler.stateOf('b')).toBe(expected ?? 'preempted');
      expect(scheduler.stats().numSwapped).toBe(swap ? 1 : 0);
      const usedByA =
        kv.stats().numUsedSlots -
        (where === 'prefilling' || where === 'decoding' ? kv.slotsOf('b').length : 0);
      expect(harness.abort('b')).toBe(true);
      expect(scheduler.stateOf('b')).toBe('aborted');
      expect(kv.stats().numUsedSlots).toBe(usedByA);
      expect(kv.stats().numFreeHostSlots).toBe(64);
      const { numRunning, numWaiting, numSwapped } = scheduler.stats();
      expect([numRunning + numWaiting, numSwapped]).toEqual([1, 0]);
      kv.checkIntegrity();
      expect(harness.abort('b')).toBe(false);
      harness.drain();
      expect(scheduler.stateOf('b')).toBeUndefined();
      expect(harness.ends.get('a')).toBe('length');
      expectPoolWhole(kv);
    },
  );

  it('forks an n > 1 request after one prefill, each child sampling the shared last row', () => {
    const { scheduler, kv, harness } = setup({ kv: kind, numSlots: 64, maxNumBatchedTokens: 32 });
    const tokens = prompt(10);
    harness.add({
      requestId: 'r',
      prompt: tokens,
      sampling: { n: 3, maxTokens: 5, ignoreEos: true, seed: 11 },
    });
    expect(['r', 'r#0', 'r#1', 'r#2'].map((id) => scheduler.stateOf(id))).toEqual(Array(4).fill('waiting'));
    const step = scheduler.schedule()!;
    expect(step.seqIds).toEqual(['r']);
    expect(Array.from(step.batch.sampleRows)).toEqual([9, 9, 9]);
    const seeds = step.batch.sampling!.map((row) => row.seed);
    expect(seeds[0]).toBe(11);
    expect(new Set(seeds).size).toBe(3);
    expect(scheduler.stateOf('r#2')).toBe('prefilling');
    const updates = scheduler.complete(step, harness.runtime.run(step));
    expect(updates.map((u) => [u.seqId, u.index, u.sampleIndex])).toEqual([
      ['r#0', 0, 0],
      ['r#1', 1, 1],
      ['r#2', 2, 2],
    ]);
    for (const u of updates) harness.tokens.set(u.seqId, [...tokens, u.tokenId]);
    expect(scheduler.stateOf('r')).toBeUndefined();
    // The children share the prompt's 10 slots.
    const shared = Array.from(kv.slotsOf('r#0'));
    expect(shared).toHaveLength(10);
    for (const id of ['r#1', 'r#2']) expect(Array.from(kv.slotsOf(id))).toEqual(shared);
    expect(kv.stats().numUsedSlots).toBe(10);
    harness.drain();
    seeds.forEach((seed, i) => {
      expect(harness.outputsOf(`r#${i}`)).toEqual(reference(tokens, seed, 5));
    });
    expectPoolWhole(kv);
  });

  it('ends on a stop id only once minTokens are out, and never under ignoreEos', () => {
    const { harness } = setup({ kv: kind, numSlots: 256 });
    // Find a prompt whose greedy continuation emits EOS early.
    let salt = 1;
    while (reference(prompt(5, salt), 0, 30).slice(0, 3).indexOf(FAKE_EOS) < 0) salt++;
    const tokens = prompt(5, salt);
    const firstEos = reference(tokens, 0, 30).indexOf(FAKE_EOS);
    harness.add({ requestId: 'plain', prompt: tokens, sampling: { maxTokens: 30, seed: 0 } });
    harness.add({
      requestId: 'min',
      prompt: tokens,
      sampling: { maxTokens: 30, seed: 0, minTokens: firstEos + 2 },
    });
    harness.add({
      requestId: 'ignore',
      prompt: tokens,
      sampling: { maxTokens: 30, seed: 0, ignoreEos: true },
    });
    harness.drain();
    expect(harness.outputsOf('plain')).toHaveLength(firstEos + 1);
    expect(harness.ends.get('plain')).toBe('stop');
    const limits = { maxTokens: 30, maxModelLen: 128, stopTokenIds: [FAKE_EOS] };
    const min = referenceOutput(tokens, 0, { ...limits, minTokens: firstEos + 2 });
    expect(harness.outputsOf('min')).toEqual(min.tokens);
    expect(harness.ends.get('min')).toBe(min.finishReason);
    expect(harness.outputsOf('ignore')).toEqual(reference(tokens, 0, 30));
    expect(harness.ends.get('ignore')).toBe('length');
  });

  it('finish() ends a sequence early and frees its KV', () => {
    const { scheduler, kv, harness } = setup({ kv: kind, numSlots: 64 });
    harness.add({ requestId: 'r', prompt: prompt(8), sampling: { maxTokens: 20, ignoreEos: true } });
    harness.step();
    harness.step();
    scheduler.finish('r', 'stop');
    expect(scheduler.stateOf('r')).toBe('finished');
    expect(scheduler.hasWork()).toBe(false);
    expectPoolWhole(kv);
    expect(() => scheduler.finish('nope', 'stop')).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('stops at maxModelLen', () => {
    const { harness } = setup({ kv: kind, numSlots: 64, maxModelLen: 12 });
    harness.add({ requestId: 'r', prompt: prompt(10), sampling: { maxTokens: 100, ignoreEos: true } });
    harness.add({ requestId: 'full', prompt: prompt(12), sampling: { maxTokens: 100, ignoreEos: true } });
    harness.drain();
    expect(harness.outputsOf('r')).toHaveLength(2);
    expect(harness.ends.get('r')).toBe('length');
    // A prompt of exactly maxModelLen still gets its one token (its KV is never needed).
    expect(harness.outputsOf('full')).toHaveLength(1);
  });
});
