import { isFerrumError } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { expectCode } from '../test/expect-code.js';
import { createKvCacheManager } from './kv-cache-manager.js';

/** A sequence with a shared (cached) 4-token prefix and `numPrivate` private slots after it. */
function withSequence(numSlots: number, numHostSlots: number, numPrivate: number) {
  const kv = createKvCacheManager({ numSlots, numHostSlots });
  kv.addSequence('warm', [1, 2, 3, 4]);
  kv.allocate('warm', 4);
  kv.commit('warm', [1, 2, 3, 4]);
  kv.free('warm');
  expect(kv.addSequence('a', [1, 2, 3, 4, 5])).toBe(4);
  kv.allocate('a', numPrivate);
  return kv;
}

describe('createKvCacheManager: swap', () => {
  it('swaps the private slots out and back in; the cached prefix stays on the device', () => {
    const kv = withSequence(16, 8, 3);
    const before = [...kv.slotsOf('a')];
    expect(kv.canSwapOut('a')).toBe(true);
    const out = kv.swapOut('a');
    expect([...out.deviceSlots]).toEqual(before.slice(4));
    expect(new Set(out.hostSlots).size).toBe(3);
    for (const slot of out.hostSlots) expect(slot >= 0 && slot < 8).toBe(true);
    expect(kv.stats()).toMatchObject({ numFreeHostSlots: 5, numFreeSlots: 12, numUsedSlots: 4 });
    expect(kv.canSwapOut('a')).toBe(false);
    expectCode(() => kv.slotsOf('a'), 'invalid_argument');
    expectCode(() => kv.allocate('a', 1), 'invalid_argument');
    kv.checkIntegrity();

    expect(kv.canSwapIn('a')).toBe(true);
    const back = kv.swapIn('a');
    expect([...back.hostSlots]).toEqual([...out.hostSlots]);
    const after = [...kv.slotsOf('a')];
    expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
    expect([...back.deviceSlots]).toEqual(after.slice(4));
    expect(kv.stats()).toMatchObject({ numFreeHostSlots: 8, numFreeSlots: 9, numUsedSlots: 7 });
    expect(kv.canSwapIn('a')).toBe(false);
    kv.checkIntegrity();
    kv.free('a');
    expect(kv.stats()).toMatchObject({ numFreeSlots: 12, numCachedSlots: 4 });
  });

  it('refuses to swap out when the host tier is full, changing nothing', () => {
    const kv = withSequence(16, 2, 3);
    expect(kv.canSwapOut('a')).toBe(false);
    const before = kv.stats();
    try {
      kv.swapOut('a');
      throw new Error('expected kv_exhausted');
    } catch (error) {
      expect(isFerrumError(error) && error.code).toBe('kv_exhausted');
      expect(isFerrumError(error) && error.details).toMatchObject({
        tier: 'host',
        requested: 3,
        available: 2,
      });
    }
    expect(kv.stats()).toEqual(before);
    kv.checkIntegrity();
    expect(createKvCacheManager({ numSlots: 4 }).canSwapOut('missing')).toBe(false);
  });

  it('waits with swap-in until the device pool has room', () => {
    const kv = withSequence(10, 8, 3);
    kv.swapOut('a');
    kv.addSequence('b', [7]);
    kv.allocate('b', 6); // 4 held by a's prefix + 6 = the whole pool
    expect(kv.canSwapIn('a')).toBe(false);
    expectCode(() => kv.swapIn('a'), 'kv_exhausted');
    kv.checkIntegrity();
    kv.free('b', { cache: false });
    expect(kv.canSwapIn('a')).toBe(true);
    kv.swapIn('a');
    kv.checkIntegrity();
  });

  it('frees a swapped-out sequence, host slots included', () => {
    const kv = withSequence(16, 8, 3);
    kv.swapOut('a');
    kv.free('a');
    expect(kv.stats()).toMatchObject({ numFreeHostSlots: 8, numFreeSlots: 12, numCachedSlots: 4 });
    kv.checkIntegrity();
  });

  it('a swapped fork relative keeps its own copy; the other one keeps the device slots', () => {
    const kv = withSequence(16, 8, 2);
    kv.fork('a', 'b');
    const out = kv.swapOut('b');
    expect([...out.deviceSlots]).toEqual([...kv.slotsOf('a')].slice(4));
    expect(kv.stats().numUsedSlots).toBe(6); // a still holds the two slots
    kv.swapIn('b');
    expect(kv.stats().numUsedSlots).toBe(8);
    kv.checkIntegrity();
  });
});

describe('createKvCacheManager: bad input', () => {
  it('rejects bad options', () => {
    for (const numSlots of [0, -1, 1.5, Number.NaN]) {
      expectCode(() => createKvCacheManager({ numSlots }), 'invalid_argument');
    }
    expectCode(() => createKvCacheManager({ numSlots: 4, numHostSlots: -1 }), 'invalid_argument');
  });

  it('rejects unknown, duplicate and malformed sequences', () => {
    const kv = createKvCacheManager({ numSlots: 8 });
    expectCode(() => kv.allocate('x', 1), 'not_found');
    expectCode(() => kv.free('x'), 'not_found');
    expectCode(() => kv.swapIn('x'), 'not_found');
    expectCode(() => kv.addSequence('x', []), 'invalid_argument');
    kv.addSequence('x', [1, 2]);
    expectCode(() => kv.addSequence('x', [1]), 'invalid_argument');
    expectCode(() => kv.allocate('x', -1), 'invalid_argument');
    expectCode(() => kv.allocate('x', 0.5), 'invalid_argument');
    expectCode(() => kv.commit('x', [1]), 'invalid_argument'); // no slots yet
    expectCode(() => kv.swapIn('x'), 'invalid_argument'); // not swapped out
    kv.addSequence('y', [3]);
    expectCode(() => kv.fork('x', 'y'), 'invalid_argument');
    kv.checkIntegrity();
  });

  it('rejects slot reads and counted commits outside the sequence or the arrays', () => {
    const kv = createKvCacheManager({ numSlots: 8, numHostSlots: 8 });
    const out = new Int32Array(4);
    expectCode(() => kv.readSlots('x', 0, 0, out, 0), 'not_found');
    kv.addSequence('x', [1, 2, 3]);
    kv.allocate('x', 3);
    kv.readSlots('x', 1, 3, out, 2);
    expect([...out]).toEqual([0, 0, ...kv.slotsOf('x').subarray(1)]);
    for (const [start, end, offset] of [
      [-1, 2, 0],
      [2, 1, 0],
      [0, 4, 0],
      [0, 3, 2],
      [0, 1, -1],
      [0.5, 1, 0],
    ]) {
      expectCode(() => kv.readSlots('x', start, end, out, offset), 'invalid_argument');
    }
    expectCode(() => kv.commit('x', [1, 2, 3, 4], 4), 'invalid_argument'); // past the slots
    expectCode(() => kv.commit('x', [1, 2], 3), 'invalid_argument'); // past the ids
    expectCode(() => kv.commit('x', [1, 2], -1), 'invalid_argument');
    kv.commit('x', [1, 2, 3, 9], 3);
    kv.swapOut('x');
    expectCode(() => kv.readSlots('x', 0, 0, out, 0), 'invalid_argument'); // swapped out
    kv.checkIntegrity();
  });
});
