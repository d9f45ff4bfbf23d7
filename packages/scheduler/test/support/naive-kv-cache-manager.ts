import type { KvCacheManager, KvCacheStats, KvSwapPlan } from '@ferrum/interfaces';
import { FerrumError } from '@ferrum/types';

/**
 * The simplest KvCacheManager that follows the interface: a free list, per-sequence slot lists and
 * per-slot reference counts (for forks), a host tier for swaps, and no prefix caching (addSequence always
 * returns 0, commit only checks its argument). An independent reference for the scheduler's tests.
 */
export class NaiveKvCacheManager implements KvCacheManager {
  readonly specificationVersion = 'v1' as const;
  private readonly freeSlots: number[] = [];
  private readonly hostFree: number[] = [];
  private readonly refs: Int32Array;
  private readonly device = new Map<string, number[]>();
  private readonly host = new Map<string, { slots: number[]; numPositions: number }>();
  private numQueryTokens = 0;

  constructor(
    readonly numSlots: number,
    readonly numHostSlots = 0,
  ) {
    for (let s = numSlots - 1; s >= 0; s--) this.freeSlots.push(s);
    for (let s = numHostSlots - 1; s >= 0; s--) this.hostFree.push(s);
    this.refs = new Int32Array(numSlots);
  }

  numAvailableSlots(): number {
    return this.freeSlots.length;
  }

  addSequence(seqId: string, tokenIds: ArrayLike<number>): number {
    if (this.device.has(seqId) || this.host.has(seqId))
      throw new FerrumError('invalid_argument', `dup ${seqId}`);
    if (tokenIds.length === 0) throw new FerrumError('invalid_argument', 'empty prompt');
    this.numQueryTokens += tokenIds.length;
    this.device.set(seqId, []);
    return 0;
  }

  canAllocate(numTokens: number): boolean {
    return numTokens <= this.freeSlots.length;
  }

  allocate(seqId: string, numTokens: number): void {
    const slots = this.deviceSlots(seqId);
    if (numTokens > this.freeSlots.length)
      throw new FerrumError('kv_exhausted', `cannot allocate ${numTokens}`);
    for (let i = 0; i < numTokens; i++) {
      const slot = this.freeSlots.pop()!;
      this.refs[slot] = 1;
      slots.push(slot);
    }
  }

  slotsOf(seqId: string): Int32Array {
    return Int32Array.from(this.deviceSlots(seqId));
  }

  readSlots(seqId: string, start: number, end: number, out: Int32Array, offset: number): void {
    const slots = this.deviceSlots(seqId);
    if (start < 0 || start > end || end > slots.length || offset < 0 || offset + end - start > out.length)
      throw new FerrumError('invalid_argument', `cannot read slots [${start}, ${end}) of ${seqId}`);
    out.set(slots.slice(start, end), offset);
  }

  commit(seqId: string, tokenIds: ArrayLike<number>, numTokens = tokenIds.length): void {
    const slots = this.deviceSlots(seqId);
    if (numTokens > tokenIds.length || numTokens > slots.length)
      throw new FerrumError('invalid_argument', `commit past ${seqId}'s slots`);
  }

  fork(parentId: string, childId: string): void {
    const slots = this.deviceSlots(parentId);
    if (this.device.has(childId) || this.host.has(childId))
      throw new FerrumError('invalid_argument', `dup ${childId}`);
    for (const slot of slots) this.refs[slot]++;
    this.device.set(childId, [...slots]);
  }

  free(seqId: string): void {
    const swapped = this.host.get(seqId);
    if (swapped !== undefined) {
      this.hostFree.push(...swapped.slots);
      this.host.delete(seqId);
      return;
    }
    this.release(this.deviceSlots(seqId));
    this.device.delete(seqId);
  }

  canSwapOut(seqId: string): boolean {
    const slots = this.device.get(seqId);
    return slots !== undefined && slots.length <= this.hostFree.length;
  }

  swapOut(seqId: string): KvSwapPlan {
    const slots = this.deviceSlots(seqId);
    if (slots.length > this.hostFree.length) throw new FerrumError('kv_exhausted', 'host tier full');
    const hostSlots = slots.map(() => this.hostFree.pop()!);
    this.release(slots);
    this.device.delete(seqId);
    this.host.set(seqId, { slots: hostSlots, numPositions: slots.length });
    return { deviceSlots: Int32Array.from(slots), hostSlots: Int32Array.from(hostSlots) };
  }

  canSwapIn(seqId: string): boolean {
    const swapped = this.host.get(seqId);
    return swapped !== undefined && swapped.slots.length <= this.freeSlots.length;
  }

  swapIn(seqId: string): KvSwapPlan {
    const swapped = this.host.get(seqId);
    if (swapped === undefined) throw new FerrumError('invalid_argument', `${seqId} is not swapped out`);
    if (swapped.slots.length > this.freeSlots.length)
      throw new FerrumError('kv_exhausted', 'device pool full');
    this.host.delete(seqId);
    this.device.set(seqId, []);
    this.allocate(seqId, swapped.slots.length);
    this.hostFree.push(...swapped.slots);
    return { deviceSlots: this.slotsOf(seqId), hostSlots: Int32Array.from(swapped.slots) };
  }

  stats(): KvCacheStats {
    return {
      numSlots: this.numSlots,
      numFreeSlots: this.freeSlots.length,
      numCachedSlots: 0,
      numUsedSlots: this.numSlots - this.freeSlots.length,
      numHostSlots: this.numHostSlots,
      numFreeHostSlots: this.hostFree.length,
      prefixHitTokens: 0,
      prefixQueryTokens: this.numQueryTokens,
      numEvictedSlots: 0,
    };
  }

  checkIntegrity(): void {
    const expected = new Int32Array(this.numSlots);
    for (const slots of this.device.values()) for (const slot of slots) expected[slot]++;
    const isFree = new Uint8Array(this.numSlots);
    for (const slot of this.freeSlots) {
      if (isFree[slot]) throw new Error(`slot ${slot} is free twice`);
      isFree[slot] = 1;
    }
    for (let s = 0; s < this.numSlots; s++) {
      if (expected[s] !== this.refs[s])
        throw new Error(`slot ${s}: refs ${this.refs[s]}, held ${expected[s]}`);
      if ((expected[s] === 0) !== (isFree[s] === 1))
        throw new Error(`slot ${s} is both free and held, or neither`);
    }
    let hostHeld = 0;
    for (const { slots } of this.host.values()) hostHeld += slots.length;
    if (hostHeld + this.hostFree.length !== this.numHostSlots) throw new Error('host slots leaked');
  }

  private deviceSlots(seqId: string): number[] {
    const slots = this.device.get(seqId);
    if (slots !== undefined) return slots;
    if (this.host.has(seqId)) throw new FerrumError('invalid_argument', `${seqId} is swapped out`);
    throw new FerrumError('not_found', `unknown sequence ${seqId}`);
  }

  private release(slots: readonly number[]): void {
    for (const slot of slots) if (--this.refs[slot] === 0) this.freeSlots.push(slot);
  }
}
