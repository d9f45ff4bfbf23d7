import { describe, expect, it } from 'vitest';
import { setup } from './support/setup.js';

/** `length` tokens cycling through `period` distinct ids (never the fake EOS). */
function cycle(length: number, period: number, stride: number): number[] {
  return Array.from({ length }, (_, i) => 1 + ((i * stride) % period));
}

describe('progress under swap preemption', () => {
  it('lets a sequence running alone take back the cached prefix a swapped sequence pins', () => {
    // 48 slots. r1 (n = 2) commits its first chunk to the cache, is swapped out mid-prompt with that prefix
    // still locked, and r0 then needs 17 + 19 = 36 slots while only 48 - 15 are not pinned by r1. Without
    // giving up r1's swap, r0 preempts itself, is re-admitted from the cache and preempts itself again.
    const { kv, harness } = setup({
      numSlots: 48,
      numHostSlots: 16,
      preemptionMode: 'swap',
      overlap: true,
      maxNumSeqs: 6,
      maxNumBatchedTokens: 16,
      maxModelLen: 40,
    });
    harness.add({ requestId: 'r0', prompt: cycle(17, 4, 1), sampling: { maxTokens: 19, ignoreEos: true } });
    harness.add({
      requestId: 'r1',
      prompt: cycle(31, 4, 2),
      sampling: { n: 2, maxTokens: 1, ignoreEos: true },
    });
    harness.drain(undefined, 500);
    expect(harness.outputsOf('r0')).toHaveLength(19);
    expect(harness.outputsOf('r1#0')).toHaveLength(1);
    expect(harness.outputsOf('r1#1')).toHaveLength(1);
    kv.checkIntegrity();
    expect(kv.stats().numUsedSlots).toBe(0);
    expect(kv.stats().numFreeHostSlots).toBe(16);
  });
});
