import type { KvCacheManager } from '@ferrum/interfaces';
import { isFerrumError } from '@ferrum/types';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKvCacheManager } from '../src/index.js';
import { ReferenceKvModel } from './reference-kv-model.js';

type Op =
  | { kind: 'add'; prompt: number[] }
  | { kind: 'probe'; prompt: number[] }
  | { kind: 'prefill'; prompt: number[] }
  | { kind: 'allocate'; pick: number; count: number }
  | { kind: 'commit'; pick: number; percent: number; fresh: number[]; counted: boolean }
  | { kind: 'free'; pick: number; cache: boolean }
  | { kind: 'fork'; pick: number }
  | { kind: 'swapOut'; pick: number }
  | { kind: 'swapIn'; pick: number };

// A three-letter alphabet and short prompts make shared prefixes, splits and duplicates common.
const tokens = (min: number, max: number) =>
  fc.array(fc.integer({ min: 0, max: 2 }), { minLength: min, maxLength: max });
const pick = fc.nat();
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('add' as const), prompt: tokens(1, 7) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('probe' as const), prompt: tokens(1, 8) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('prefill' as const), prompt: tokens(1, 8) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('allocate' as const), pick, count: fc.nat({ max: 5 }) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('commit' as const),
      pick,
      percent: fc.integer({ min: 0, max: 100 }),
      fresh: tokens(1, 3),
      counted: fc.boolean(),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('free' as const), pick, cache: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fork' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('swapOut' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('swapIn' as const), pick }) },
);

function expectExhausted(fn: () => unknown): void {
  let error: unknown;
  try {
    fn();
  } catch (caught) {
    error = caught;
  }
  expect(isFerrumError(error) && error.code).toBe('kv_exhausted');
}

/** Drives the manager and the reference side by side, comparing after every operation. */
class Harness {
  private readonly history = new Map<string, number[]>();
  private nextId = 0;

  constructor(
    private readonly kv: KvCacheManager,
    private readonly ref: ReferenceKvModel,
  ) {}

  apply(o: Op): void {
    switch (o.kind) {
      case 'add':
      case 'probe':
        this.add(o.prompt, o.kind === 'probe');
        break;
      case 'prefill':
        this.prefill(o.prompt);
        break;
      case 'allocate':
        this.withSequence(o.pick, false, (id) => this.allocate(id, o.count));
        break;
      case 'commit':
        this.withSequence(o.pick, false, (id) => this.commit(id, o.percent, o.fresh, o.counted));
        break;
      case 'free':
        this.withSequence(o.pick, null, (id) => this.release(id, o.cache));
        break;
      case 'fork':
        this.withSequence(o.pick, false, (id) => this.fork(id));
        break;
      case 'swapOut':
        this.withSequence(o.pick, false, (id) => this.swapOut(id));
        break;
      case 'swapIn':
        this.withSequence(o.pick, true, (id) => this.swapIn(id));
        break;
    }
    this.compare();
  }

  releaseAll(): void {
    for (const id of [...this.history.keys()]) this.release(id, true);
    this.compare();
  }

  private add(prompt: number[], probe: boolean): string {
    const id = `s${this.nextId++}`;
    expect(this.kv.addSequence(id, prompt)).toBe(this.ref.add(id, prompt));
    this.history.set(id, prompt.slice());
    if (probe) this.release(id, false);
    return id;
  }

  /** A whole prompt step: add, allocate the uncached rest, commit the prompt (when the pool had room). */
  private prefill(prompt: number[]): void {
    const id = this.add(prompt, false);
    this.compare();
    if (this.allocate(id, prompt.length - this.kv.slotsOf(id).length)) {
      this.compare();
      this.commit(id, 100, [0], false);
    }
  }

  private allocate(id: string, count: number): boolean {
    if (!this.ref.canReserve(count)) {
      expect(this.kv.canAllocate(count)).toBe(false);
      expectExhausted(() => this.kv.allocate(id, count));
      return false;
    }
    expect(this.kv.canAllocate(count)).toBe(true);
    const evictedBefore = this.kv.stats().numEvictedSlots;
    const before = this.kv.slotsOf(id);
    this.kv.allocate(id, count);
    const after = this.kv.slotsOf(id);
    expect(after.length).toBe(before.length + count);
    expect(after.subarray(0, before.length)).toEqual(before);
    this.ref.reserve(count, this.kv.stats().numEvictedSlots - evictedBefore);
    this.ref.allocate(id, count);
    return true;
  }

  /** `counted`: pass the whole history and a count, as the scheduler does, instead of an exact array. */
  private commit(id: string, percent: number, fresh: number[], counted: boolean): void {
    const history = this.history.get(id)!;
    const length = this.kv.slotsOf(id).length;
    for (let i = 0; history.length < length; i++) history.push(fresh[i % fresh.length]); // sampled tokens
    const numTokens = Math.floor((length * percent) / 100);
    const committed = history.slice(0, numTokens);
    if (counted) this.kv.commit(id, history, numTokens);
    else this.kv.commit(id, committed);
    this.ref.commit(id, committed);
  }

  private release(id: string, cache: boolean): void {
    this.kv.free(id, { cache });
    this.ref.release(id, cache);
    this.history.delete(id);
  }

  private fork(id: string): void {
    const child = `s${this.nextId++}`;
    this.kv.fork(id, child);
    this.ref.fork(id, child);
    this.history.set(child, this.history.get(id)!.slice());
  }

  private swapOut(id: string): void {
    const possible = this.ref.canSwapOut(id);
    expect(this.kv.canSwapOut(id)).toBe(possible);
    if (!possible) {
      expectExhausted(() => this.kv.swapOut(id));
      return;
    }
    const plan = this.kv.swapOut(id);
    expect(plan.hostSlots.length).toBe(plan.deviceSlots.length);
    this.ref.swapOut(id);
  }

  private swapIn(id: string): void {
    const seq = this.ref.sequences.get(id)!;
    const count = seq.length - seq.cached;
    const possible = this.ref.canReserve(count);
    expect(this.kv.canSwapIn(id)).toBe(possible);
    if (!possible) {
      expectExhausted(() => this.kv.swapIn(id));
      return;
    }
    const evictedBefore = this.kv.stats().numEvictedSlots;
    expect(this.kv.swapIn(id).deviceSlots.length).toBe(count);
    this.ref.reserve(count, this.kv.stats().numEvictedSlots - evictedBefore);
    this.ref.swapIn(id);
  }

  /** `readSlots` agrees with `slotsOf` on the whole list and on a range, at an offset into a larger array. */
  private compareSlots(id: string, length: number): void {
    const slots = this.kv.slotsOf(id);
    expect(slots.length).toBe(length);
    const out = new Int32Array(length + 2).fill(-1);
    this.kv.readSlots(id, 0, length, out, 1);
    expect(out).toEqual(Int32Array.of(-1, ...slots, -1));
    const start = length >> 1;
    this.kv.readSlots(id, start, length, out, 0);
    expect(out.subarray(0, length - start)).toEqual(slots.subarray(start));
  }

  /** Run `fn` on a live sequence chosen by `pick`; `swapped` filters (null: any). */
  private withSequence(pick: number, swapped: boolean | null, fn: (id: string) => unknown): void {
    const ids = [...this.ref.sequences].filter(([, s]) => swapped === null || (s.cells === null) === swapped);
    if (ids.length > 0) fn(ids[pick % ids.length][0]);
  }

  private compare(): void {
    this.kv.checkIntegrity();
    for (const [id, seq] of this.ref.sequences) if (seq.cells !== null) this.compareSlots(id, seq.length);
    const stats = this.kv.stats();
    expect(stats.numFreeSlots).toBe(this.ref.free());
    expect(stats.numCachedSlots).toBe(this.ref.evictable());
    expect(stats.numFreeSlots + stats.numCachedSlots + stats.numUsedSlots).toBe(stats.numSlots);
    expect(stats.numFreeHostSlots).toBe(this.ref.numHostSlots - this.ref.hostUsed);
    expect(stats.prefixHitTokens).toBe(this.ref.hits);
    expect(stats.prefixQueryTokens).toBe(this.ref.queries);
  }
}

describe('KV cache manager against a naive reference model', () => {
  it('agrees on matches, evictions and pool accounting for random interleavings', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 6, max: 24 }),
        fc.integer({ min: 0, max: 16 }),
        fc.boolean(),
        fc.array(op, { minLength: 10, maxLength: 120, size: 'max' }),
        (numSlots, numHostSlots, prefixCaching, ops) => {
          const kv = createKvCacheManager({ numSlots, numHostSlots, enablePrefixCaching: prefixCaching });
          const harness = new Harness(kv, new ReferenceKvModel(numSlots, numHostSlots, prefixCaching));
          for (const o of ops) harness.apply(o);
          harness.releaseAll();
          const stats = kv.stats();
          expect(stats.numUsedSlots).toBe(0);
          expect(stats.numFreeHostSlots).toBe(numHostSlots);
        },
      ),
      { numRuns: 400 },
    );
  });
});
