import { FerrumError } from '@ferrum/types';

/**
 * Free list of a fixed set of slot ids `0..capacity-1`, kept as a preallocated Int32Array stack so that
 * taking and returning slots allocates nothing. Knows nothing about who holds a taken slot.
 */
export class SlotPool {
  readonly capacity: number;
  private readonly stack: Int32Array;
  private top: number;

  /** All `capacity` slots start free; low ids are handed out first. */
  constructor(capacity: number) {
    this.capacity = capacity;
    this.stack = new Int32Array(capacity);
    for (let i = 0; i < capacity; i++) this.stack[i] = capacity - 1 - i;
    this.top = capacity;
  }

  get numFree(): number {
    return this.top;
  }

  /** Move `count` free slots into `out[offset..offset+count)`. The caller checked `numFree` first. */
  takeInto(out: Int32Array, offset: number, count: number): void {
    if (count > this.top) {
      throw new FerrumError('internal', `slot pool asked for ${count} slots with ${this.top} free`);
    }
    for (let i = 0; i < count; i++) out[offset + i] = this.stack[--this.top];
  }

  /** Return one slot. The caller guarantees it is not already free (checkIntegrity proves it). */
  give(slot: number): void {
    this.stack[this.top++] = slot;
  }

  /** Return `slots[from..to)`. */
  giveRange(slots: Int32Array, from: number, to: number): void {
    for (let i = from; i < to; i++) this.stack[this.top++] = slots[i];
  }

  /** The free slots, for integrity checks; a view valid until the next take or give. */
  freeSlots(): Int32Array {
    return this.stack.subarray(0, this.top);
  }
}
