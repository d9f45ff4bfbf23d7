import type { ScheduledStep } from '@ferrum/interfaces';
import { describe, expect, it } from 'vitest';
import { FAKE_EOS, referenceOutput } from './support/fake-runtime.js';
import { type KvKind, prompt, setup } from './support/setup.js';

const KINDS: KvKind[] = ['radix', 'naive'];

function reference(tokens: number[], seed: number, maxTokens: number, stopTokenIds: number[] = []) {
  return referenceOutput(tokens, seed, { maxTokens, minTokens: 0, maxModelLen: 128, stopTokenIds }).tokens;
}

function expectPoolWhole(kv: {
  checkIntegrity(): void;
  stats(): { numUsedSlots: number; numFreeHostSlots: number; numHostSlots: number };
}) {
  kv.checkIntegrity();
  expect(kv.stats().numUsedSlots).toBe(0);
  expect(kv.stats().numFreeHostSlots).toBe(kv.stats().numHostSlots);
}

/** Planned steps as [seqIds, number of placeholder rows]. */
function shapeOf(step: ScheduledStep): [string[], number] {
  return [[...step.seqIds], step.placeholders?.rows.length ?? 0];
}

// The harness in overlap mode plans each step while the previous one is in flight, runs that one on the
// fake model only when completing it, and checks every batch before and after its placeholders are filled.
describe.each(KINDS)('async scheduling over the %s KV manager', (kind) => {
  it('decodes the placeholder of a prompt whose last row is in flight, filled on complete', () => {
    const { scheduler, kv, harness } = setup({ kv: kind, numSlots: 64, overlap: true });
    const tokens = prompt(6);
    harness.add({ requestId: 'r', prompt: tokens, sampling: { maxTokens: 5, ignoreEos: true, seed: 3 } });
    let first!: ScheduledStep;
    let second!: ScheduledStep;
    expect(harness.step((step) => (first = step))).toEqual([]);
    const updates = harness.step((step) => {
      second = step;
      // Planned while `first` runs: position 6 holds the token `first` samples, unknown yet.
      expect(Array.from(step.batch.positions)).toEqual([6]);
      expect(Array.from(step.placeholders!.rows)).toEqual([0]);
      expect(Array.from(step.placeholders!.sampleIndices)).toEqual([0]);
      expect(step.batch.tokenIds[0]).toBe(0);
      // Its sampling record already counts that token among the outputs (seeded draws depend on the count).
      expect(step.batch.sampling![0].outputTokenIds).toHaveLength(1);
      expect(kv.stats().numUsedSlots).toBe(7);
      expect(scheduler.stateOf('r')).toBe('prefilling');
    })!;
    expect(updates).toHaveLength(1);
    const token = updates[0].tokenId;
    expect(token).toBe(reference(tokens, 3, 1)[0]);
    expect(second.batch.tokenIds[0]).toBe(token);
    expect(Array.from(second.batch.sampling![0].outputTokenIds)).toEqual([token]);
    // The first step kept its own arrays and sampling record while the second was built.
    expect(Array.from(first.batch.tokenIds)).toEqual(tokens);
    expect(first.batch.sampling![0].outputTokenIds).toHaveLength(0);
    harness.drain();
    expect(harness.outputsOf('r')).toEqual(reference(tokens, 3, 5));
    // One prefill and four decodes: the step that samples the fifth token has nothing planned after it.
    expect(harness.numSteps).toBe(5);
    expectPoolWhole(kv);
  });

  it('plans the next chunk of a prompt while its previous chunk is in flight', () => {
    const { kv, harness } = setup({ kv: kind, numSlots: 128, maxNumBatchedTokens: 16, overlap: true });
    const tokens = prompt(40);
    harness.add({ requestId: 'r', prompt: tokens, sampling: { maxTokens: 3, ignoreEos: true, seed: 5 } });
    const rows: [number, number, number][] = [];
    harness.drain((step) => {
      rows.push([step.batch.positions[0], step.batch.numTokens, step.placeholders?.rows.length ?? 0]);
    });
    expect(rows).toEqual([
      [0, 16, 0],
      [16, 16, 0],
      [32, 8, 0],
      [40, 1, 1],
      [41, 1, 1],
    ]);
    expect(harness.numOverlapped).toBe(4);
    expect(harness.outputsOf('r')).toEqual(reference(tokens, 5, 3));
    expectPoolWhole(kv);
  });

  it('does not run ahead of a token that ends a sequence by length or forks it', () => {
    const { kv, harness } = setup({ kv: kind, numSlots: 64, overlap: true });
    const tokens = prompt(5);
    harness.add({ requestId: 'one', prompt: tokens, sampling: { maxTokens: 1, seed: 1 } });
    harness.add({
      requestId: 'fork',
      prompt: tokens,
      sampling: { n: 2, maxTokens: 3, ignoreEos: true, seed: 2 },
    });
    const planned: [string[], number][] = [];
    harness.drain((step) => planned.push(shapeOf(step)));
    expect(planned).toEqual([
      [['one', 'fork'], 0],
      [['fork#0', 'fork#1'], 0],
      [['fork#0', 'fork#1'], 2],
    ]);
    expect(harness.outputsOf('one')).toHaveLength(1);
    expect(harness.outputsOf('fork#0')).toEqual(reference(tokens, 2, 3));
    expectPoolWhole(kv);
  });

  it('discards the row of a sequence that stops in the step in flight, exactly once', () => {
    const { kv, harness } = setup({ kv: kind, numSlots: 256, overlap: true });
    let salt = 1;
    while (reference(prompt(5, salt), 0, 30).slice(1, 4).indexOf(FAKE_EOS) < 0) salt++;
    const tokens = prompt(5, salt);
    harness.add({ requestId: 'eos', prompt: tokens, sampling: { maxTokens: 30, seed: 0 } });
    harness.add({ requestId: 'long', prompt: prompt(5, 999), sampling: { maxTokens: 12, ignoreEos: true } });
    harness.drain();
    // The step after the one that sampled EOS already held a row for it: computed, then ignored.
    expect(harness.outputsOf('eos')).toEqual(reference(tokens, 0, 30, [FAKE_EOS]));
    expect(harness.ends.get('eos')).toBe('stop');
    expect(harness.numDiscarded).toBe(1);
    expect(harness.outputsOf('long')).toHaveLength(12);
    expectPoolWhole(kv);
  });

  it('ignores rows of sequences finished or aborted while two steps are outstanding', () => {
    const { scheduler, kv, harness } = setup({ kv: kind, numSlots: 256, overlap: true });
    const sampling = { maxTokens: 20, ignoreEos: true };
    harness.add({ requestId: 'stop', prompt: prompt(6, 1), sampling });
    harness.add({ requestId: 'abort', prompt: prompt(6, 2), sampling });
    harness.add({ requestId: 'keep', prompt: prompt(6, 3), sampling: { ...sampling, seed: 4 } });
    harness.step();
    harness.step();
    // As the engine does on a stop string: finish after complete(N), while N + 1 runs with its row.
    scheduler.finish('stop', 'stop');
    harness.ends.set('stop', 'stop');
    harness.step((step) => {
      // N + 1 is in flight, N + 2 planned: both hold a row for 'abort'.
      expect(step.seqIds).toEqual(['abort', 'keep']);
      harness.abort('abort');
    });
    expect(kv.stats().numUsedSlots).toBe(kv.slotsOf('keep').length);
    harness.drain();
    // Each took only the token of the first step: the rows of the steps in flight when it ended were ignored.
    expect(harness.outputsOf('stop')).toHaveLength(1);
    expect(harness.outputsOf('abort')).toHaveLength(1);
    expect(harness.numDiscarded).toBe(1);
    expect(harness.outputsOf('keep')).toEqual(reference(prompt(6, 3), 4, 20));
    expectPoolWhole(kv);
  });

  it.each(['recompute', 'swap'] as const)(
    'preempts a sequence of the step in flight (%s), which keeps the token that step samples',
    (preemptionMode) => {
      const { kv, harness } = setup({
        kv: kind,
        numSlots: 40,
        numHostSlots: 64,
        maxNumBatchedTokens: 32,
        preemptionMode,
        overlap: true,
      });
      const a = prompt(15, 1);
      const b = prompt(15, 2);
      harness.add({ requestId: 'a', prompt: a, sampling: { maxTokens: 20, ignoreEos: true, seed: 1 } });
      harness.add({ requestId: 'b', prompt: b, sampling: { maxTokens: 20, ignoreEos: true, seed: 2 } });
      const preempted: string[] = [];
      harness.drain((step) => preempted.push(...step.preempted));
      expect(preempted).toEqual(['b']);
      expect(harness.numPreemptedInFlight).toBe(1);
      expect(harness.numSwapOuts).toBe(preemptionMode === 'swap' ? 1 : 0);
      expect(harness.outputsOf('a')).toEqual(reference(a, 1, 20));
      expect(harness.outputsOf('b')).toEqual(reference(b, 2, 20));
      expectPoolWhole(kv);
      if (kind === 'naive') return;
      // b finished last and left everything it computed (prompt and 19 outputs) in the prefix cache: a
      // request repeating it computes one token.
      const again = [...b, ...harness.outputsOf('b')];
      harness.add({ requestId: 'c', prompt: again, sampling: { maxTokens: 1, seed: 2 } });
      harness.step((step) => expect(step.batch.numTokens).toBe(1));
    },
  );

  it('preempts a worse-priority sequence of the step in flight for a better waiting one', () => {
    const { kv, harness } = setup({ kv: kind, numSlots: 64, maxNumSeqs: 1, overlap: true });
    const low = prompt(6, 1);
    const high = prompt(6, 2);
    const sampling = (seed: number) => ({ maxTokens: 8, ignoreEos: true, seed });
    harness.add({ requestId: 'low', prompt: low, priority: 1, sampling: sampling(1) });
    harness.step();
    harness.step();
    harness.add({ requestId: 'high', prompt: high, priority: 0, sampling: sampling(2) });
    const planned: [string[], string[]][] = [];
    harness.drain((step) => planned.push([[...step.seqIds], [...step.preempted]]));
    expect(planned[0]).toEqual([['high'], ['low']]);
    expect(harness.numPreemptedInFlight).toBe(1);
    expect(harness.outputsOf('low')).toEqual(reference(low, 1, 8));
    expect(harness.outputsOf('high')).toEqual(reference(high, 2, 8));
    expectPoolWhole(kv);
  });
});
