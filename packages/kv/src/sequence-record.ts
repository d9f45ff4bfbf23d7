import type { RadixNode } from './radix-node.js';

/**
 * What the manager knows about one sequence. Positions `[0, cachedLength)` live in slots owned by the
 * radix tree (the path locked at `lockedNode`); positions `[cachedLength, length)` are private slots,
 * shared only with fork relatives through per-slot reference counts.
 *
 * ```
 * slots:  | tree path (locked) | private (refcounted) |      spare capacity      |
 *         0                cachedLength            length                  slots.length
 * tokens: | committed token ids                   |
 *         0                                 numCommitted (<= length)
 * ```
 */
export class SequenceRecord {
  slots: Int32Array;
  length = 0;
  tokens: Int32Array;
  numCommitted = 0;
  /** Deepest locked tree node; the tree's root when nothing is cached. */
  lockedNode: RadixNode;
  /** Host slots of the private positions while swapped out, else null. */
  hostSlots: Int32Array | null = null;
  /** `slots[0, prefix.length)` as a view (live: it sees writes to `slots`), for {@link copySlots}. */
  private prefix: Int32Array | null = null;
  /** The array `prefix` views; a regrown `slots` needs a new one. */
  private prefixSource: Int32Array | null = null;

  constructor(lockedNode: RadixNode, capacity: number) {
    this.lockedNode = lockedNode;
    this.slots = new Int32Array(Math.max(capacity, 16));
    this.tokens = new Int32Array(Math.max(capacity, 16));
  }

  get cachedLength(): number {
    return this.lockedNode.depth;
  }

  /**
   * Copy `slots[start, end)` into `out` at `offset` (bounds checked by the caller). The scheduler copies
   * every sequence's whole slot list every step: a loop costs ~1.5 ns a slot, a memcpy (`set`) a tenth of
   * that but needs a view, so positions from 0 up to a multiple of {@link PREFIX_QUANTUM} go through a
   * cached view, remade once every PREFIX_QUANTUM slots a sequence grows, and only the rest through a loop.
   */
  copySlots(start: number, end: number, out: Int32Array, offset: number): void {
    const { slots } = this;
    let from = start;
    const prefixEnd = end - (end % PREFIX_QUANTUM);
    if (start === 0 && prefixEnd > 0) {
      if (this.prefix === null || this.prefix.length !== prefixEnd || this.prefixSource !== slots) {
        this.prefix = slots.subarray(0, prefixEnd);
        this.prefixSource = slots;
      }
      out.set(this.prefix, offset);
      from = prefixEnd;
    }
    const shift = offset - start;
    for (let p = from; p < end; p++) out[shift + p] = slots[p];
  }

  /** Make room for `length` slots, doubling so that per-token appends stay amortized O(1). */
  reserveSlots(length: number): void {
    if (length > this.slots.length) this.slots = regrow(this.slots, this.length, length);
  }

  /** Record the first `count` committed token ids; positions already recorded are kept. */
  recordTokens(tokenIds: ArrayLike<number>, count: number): void {
    if (count <= this.numCommitted) return;
    if (count > this.tokens.length) this.tokens = regrow(this.tokens, this.numCommitted, count);
    for (let i = this.numCommitted; i < count; i++) this.tokens[i] = tokenIds[i];
    this.numCommitted = count;
  }

  /** A copy for a fork child: same slots, same committed tokens, same locked node. */
  clone(): SequenceRecord {
    const copy = new SequenceRecord(this.lockedNode, 0);
    copy.slots = this.slots.slice(0, Math.max(this.length, 16));
    copy.length = this.length;
    copy.tokens = this.tokens.slice(0, Math.max(this.numCommitted, 16));
    copy.numCommitted = this.numCommitted;
    return copy;
  }
}

/** Granularity of the cached view {@link SequenceRecord.copySlots} copies through. */
const PREFIX_QUANTUM = 128;

function regrow(array: Int32Array, used: number, needed: number): Int32Array {
  const next = new Int32Array(Math.max(needed, array.length * 2));
  next.set(array.subarray(0, used));
  return next;
}
