import { describe, expect, it } from 'vitest';
import { expectCode } from '../test/expect-code.js';
import { createKvCacheManager } from './kv-cache-manager.js';

/** Run a whole prompt through: add, allocate the uncached rest, commit all of it. */
function runPrompt(kv: ReturnType<typeof createKvCacheManager>, seqId: string, prompt: number[]): number {
  const matched = kv.addSequence(seqId, prompt);
  kv.allocate(seqId, prompt.length - matched);
  kv.commit(seqId, prompt);
  kv.checkIntegrity();
  return matched;
}

/** Matched length of `prompt` right now (adds and drops a probe sequence). */
function probe(kv: ReturnType<typeof createKvCacheManager>, prompt: number[]): number {
  const matched = kv.addSequence('probe', prompt);
  kv.free('probe', { cache: false });
  return matched;
}

describe('createKvCacheManager: prefix cache', () => {
  it('caches a finished sequence and serves its prefix to the next one, leaving one token uncached', () => {
    const kv = createKvCacheManager({ numSlots: 32 });
    expect(runPrompt(kv, 'a', [1, 2, 3, 4])).toBe(0);
    const slotsA = [...kv.slotsOf('a')];
    kv.free('a');
    expect(kv.stats()).toMatchObject({ numFreeSlots: 28, numCachedSlots: 4, numUsedSlots: 0 });
    expect(kv.addSequence('b', [1, 2, 3, 4])).toBe(3);
    expect([...kv.slotsOf('b')]).toEqual(slotsA.slice(0, 3));
    expect(kv.stats()).toMatchObject({
      numCachedSlots: 1,
      numUsedSlots: 3,
      prefixHitTokens: 3,
      prefixQueryTokens: 8,
    });
    kv.checkIntegrity();
  });

  it('splits a node on a partial match and matches both branches afterwards', () => {
    const kv = createKvCacheManager({ numSlots: 32 });
    runPrompt(kv, 'a', [1, 2, 3, 4, 5, 6]);
    kv.free('a');
    expect(runPrompt(kv, 'b', [1, 2, 3, 9, 9])).toBe(3);
    kv.free('b');
    expect(probe(kv, [1, 2, 3, 4, 5, 6, 7])).toBe(6);
    expect(probe(kv, [1, 2, 3, 9, 9, 7])).toBe(5);
    expect(probe(kv, [1, 2, 8])).toBe(2);
    expect(kv.stats().numCachedSlots).toBe(8);
    kv.checkIntegrity();
  });

  it('caches in-progress sequences on commit and deduplicates slots already cached', () => {
    const kv = createKvCacheManager({ numSlots: 32 });
    kv.addSequence('a', [1, 2, 3, 4]);
    kv.addSequence('b', [1, 2, 3, 4]);
    kv.allocate('a', 4);
    kv.allocate('b', 4);
    kv.commit('a', [1, 2, 3, 4]);
    expect(probe(kv, [1, 2, 3, 4, 5])).toBe(4);
    kv.commit('b', [1, 2, 3, 4]);
    // b now reads the same cached slots; its own four went back to the free list.
    expect([...kv.slotsOf('b')]).toEqual([...kv.slotsOf('a')]);
    expect(kv.stats().numFreeSlots).toBe(28);
    kv.allocate('a', 1);
    kv.commit('a', [1, 2, 3, 4, 5]);
    expect(probe(kv, [1, 2, 3, 4, 5, 6])).toBe(5);
    kv.checkIntegrity();
  });

  it('evicts unreferenced prefixes in LRU order when the pool runs short', () => {
    const kv = createKvCacheManager({ numSlots: 12 });
    for (const [id, prompt] of [
      ['a', [1, 1, 1, 1]],
      ['b', [2, 2, 2, 2]],
      ['c', [3, 3, 3, 3]],
    ] as const) {
      runPrompt(kv, id, [...prompt]);
      kv.free(id);
    }
    expect(probe(kv, [1, 1, 1, 1, 0])).toBe(4); // a is now the most recently used
    expect(kv.numAvailableSlots()).toBe(12);
    runPrompt(kv, 'd', [4, 4, 4, 4]);
    expect(kv.stats().numEvictedSlots).toBe(4);
    expect(probe(kv, [2, 2, 2, 2, 0])).toBe(0); // b was the least recently used
    expect(probe(kv, [1, 1, 1, 1, 0])).toBe(4);
    expect(probe(kv, [3, 3, 3, 3, 0])).toBe(4);
    kv.checkIntegrity();
  });

  it('never evicts a prefix a live sequence holds, and reports kv_exhausted when truly full', () => {
    const kv = createKvCacheManager({ numSlots: 8 });
    runPrompt(kv, 'a', [1, 2, 3, 4]);
    kv.free('a');
    expect(kv.addSequence('b', [1, 2, 3, 4, 5])).toBe(4); // b locks all of a's slots
    expect(kv.canAllocate(4)).toBe(true);
    expect(kv.canAllocate(5)).toBe(false);
    kv.allocate('b', 1);
    kv.addSequence('c', [9]);
    expectCode(() => kv.allocate('c', 4), 'kv_exhausted');
    kv.checkIntegrity(); // the failed call changed nothing
    kv.allocate('c', 3);
    expect(kv.numAvailableSlots()).toBe(0);
    expectCode(() => kv.allocate('c', 1), 'kv_exhausted');
    expect(kv.stats().numEvictedSlots).toBe(0);
    kv.free('b');
    expect(probe(kv, [1, 2, 3, 4, 5, 6])).toBe(4); // still cached, though b's fifth token was never committed
    kv.checkIntegrity();
  });

  it('free with cache:false frees what commit has not shared, keeps what it has', () => {
    const kv = createKvCacheManager({ numSlots: 32 });
    kv.addSequence('a', [1, 2, 3, 4, 5, 6]);
    kv.allocate('a', 10);
    kv.commit('a', [1, 2, 3, 4, 5, 6]);
    kv.free('a', { cache: false });
    expect(kv.stats()).toMatchObject({ numFreeSlots: 26, numCachedSlots: 6, numUsedSlots: 0 });
    kv.checkIntegrity();
  });

  it('with prefix caching disabled, nothing is matched or kept', () => {
    const kv = createKvCacheManager({ numSlots: 16, enablePrefixCaching: false });
    expect(runPrompt(kv, 'a', [1, 2, 3, 4])).toBe(0);
    kv.free('a');
    expect(kv.stats()).toMatchObject({ numFreeSlots: 16, numCachedSlots: 0, prefixHitTokens: 0 });
    expect(runPrompt(kv, 'b', [1, 2, 3, 4])).toBe(0);
    kv.fork('b', 'c');
    kv.free('b');
    kv.free('c');
    expect(kv.stats().numFreeSlots).toBe(16);
    kv.checkIntegrity();
  });
});

describe('createKvCacheManager: fork', () => {
  for (const order of [
    ['parent', 'child'],
    ['child', 'parent'],
  ]) {
    it(`shares slots with reference counts; freeing ${order[0]} first leaks nothing`, () => {
      const kv = createKvCacheManager({ numSlots: 32 });
      kv.addSequence('parent', [1, 2, 3, 4, 5, 6]);
      kv.allocate('parent', 6);
      kv.commit('parent', [1, 2, 3, 4]); // positions 4 and 5 stay private
      kv.fork('parent', 'child');
      expect([...kv.slotsOf('child')]).toEqual([...kv.slotsOf('parent')]);
      kv.allocate('child', 1);
      kv.allocate('parent', 1);
      const own = [kv.slotsOf('child')[6], kv.slotsOf('parent')[6]];
      expect(new Set([...kv.slotsOf('parent'), ...own]).size).toBe(8);
      expect(kv.stats()).toMatchObject({ numUsedSlots: 8, numFreeSlots: 24 });
      kv.checkIntegrity();
      kv.free(order[0]);
      // The survivor still holds the tree prefix, the two shared slots and its own one.
      expect(kv.stats()).toMatchObject({ numUsedSlots: 7, numFreeSlots: 25 });
      kv.checkIntegrity();
      kv.free(order[1]);
      expect(kv.stats()).toMatchObject({ numUsedSlots: 0, numCachedSlots: 4, numFreeSlots: 28 });
      kv.checkIntegrity();
    });
  }

  it('shares fork-shared positions only once no relative holds them', () => {
    const kv = createKvCacheManager({ numSlots: 32 });
    kv.addSequence('p', [1, 2, 3, 4, 5]);
    kv.allocate('p', 5);
    kv.fork('p', 'c');
    kv.commit('p', [1, 2, 3, 4, 5]);
    kv.commit('c', [1, 2, 3, 4, 5]);
    expect(probe(kv, [1, 2, 3, 4, 5, 6])).toBe(0);
    kv.free('c');
    kv.commit('p', [1, 2, 3, 4, 5]);
    expect(probe(kv, [1, 2, 3, 4, 5, 6])).toBe(5);
    kv.checkIntegrity();
  });

  it('free with cache inserts positions that became exclusive; cache:false does not', () => {
    for (const cache of [true, false]) {
      const kv = createKvCacheManager({ numSlots: 32 });
      kv.addSequence('p', [1, 2, 3]);
      kv.allocate('p', 3);
      kv.fork('p', 'c');
      kv.commit('p', [1, 2, 3]); // blocked: c holds the same slots
      kv.free('c');
      kv.free('p', { cache });
      expect(kv.stats().numCachedSlots).toBe(cache ? 3 : 0);
      kv.checkIntegrity();
    }
  });
});

describe('createKvCacheManager: readSlots', () => {
  /** readSlots of the whole list, at an offset into a larger array, against slotsOf. */
  function expectReadable(kv: ReturnType<typeof createKvCacheManager>, seqId: string): void {
    const slots = kv.slotsOf(seqId);
    const out = new Int32Array(slots.length + 3).fill(-1);
    kv.readSlots(seqId, 0, slots.length, out, 2);
    expect([...out]).toEqual([-1, -1, ...slots, -1]);
    kv.readSlots(seqId, 5, slots.length, out, 0);
    expect([...out.subarray(0, slots.length - 5)]).toEqual([...slots.subarray(5)]);
  }

  it('agrees with slotsOf as lists grow past its copy granularity, regrow, and switch to cached slots', () => {
    const kv = createKvCacheManager({ numSlots: 2048 });
    const prompt = Array.from({ length: 300 }, (_, i) => i % 50);
    kv.addSequence('a', prompt);
    kv.addSequence('b', prompt);
    kv.allocate('a', 300);
    kv.allocate('b', 300);
    expectReadable(kv, 'b');
    kv.allocate('b', 1); // past the first array's capacity
    // Both computed the prompt in their own slots: committing b after a moves b onto a's cached slots.
    kv.commit('a', prompt);
    kv.commit('b', prompt);
    expect([...kv.slotsOf('b').subarray(0, 300)]).toEqual([...kv.slotsOf('a')]);
    expectReadable(kv, 'b');
    for (let step = 0; step < 300; step++) {
      kv.allocate('b', 1); // past 384 and 512 slots
      if (step % 37 === 0 || step > 290) expectReadable(kv, 'b');
    }
    kv.checkIntegrity();
  });
});
