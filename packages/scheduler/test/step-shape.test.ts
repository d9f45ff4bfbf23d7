import { describe, expect, it } from 'vitest';
import { referenceOutput } from './support/fake-runtime.js';
import { prompt, setup } from './support/setup.js';

const code = (c: string) => expect.objectContaining({ code: c });

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
  it('allows a second step planned while the first runs, no third, and completes them in order', () => {
    const { scheduler, harness } = setup({ numSlots: 64 });
    harness.add({ requestId: 'a', prompt: prompt(4), sampling: { maxTokens: 4 } });
    const first = scheduler.schedule()!;
    const second = scheduler.schedule()!;
    expect(second.seqIds).toEqual(['a']);
    expect(() => scheduler.schedule()).toThrow(code('invalid_argument'));
    expect(() => scheduler.complete({ ...first }, new Int32Array(1))).toThrow(code('invalid_argument'));
    expect(() => scheduler.complete(first, new Int32Array(0))).toThrow(code('invalid_argument'));
    expect(() => scheduler.complete(second, new Int32Array(1))).toThrow(code('invalid_argument'));
    // After a failed forward the engine aborts the steps' requests and carries on without completing them.
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
