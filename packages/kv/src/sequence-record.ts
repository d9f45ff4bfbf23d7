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

  constructor(lockedNode: RadixNode, capacity: number) {
    this.lockedNode = lockedNode;
    this.slots = new Int32Array(Math.max(capacity, 16));
    this.tokens = new Int32Array(Math.max(capacity, 16));
  }

  get cachedLength(): number {
    return this.lockedNode.depth;
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

function regrow(array: Int32Array, used: number, needed: number): Int32Array {
  const next = new Int32Array(Math.max(needed, array.length * 2));
  next.set(array.subarray(0, used));
  return next;
}
