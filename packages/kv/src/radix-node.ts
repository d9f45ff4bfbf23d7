import type { HeapEntry } from './lru-heap.js';

/**
 * One edge of the radix tree: a run of tokens and the slots holding their KV.
 *
 * `tokens` and `slots` may be longer than `length` (spare capacity for in-place growth of a leaf); only
 * `[0, length)` is meaningful. After a split the upper part is a view of the front of the old arrays and
 * the lower part a view of the rest, so the spare tail always belongs to the deepest part.
 */
export class RadixNode implements HeapEntry {
  tokens: Int32Array;
  slots: Int32Array;
  length: number;
  /** Position just past this node's last token, i.e. the number of tokens from the root through here. */
  depth: number;
  parent: RadixNode | null;
  /** Children keyed by their first token. */
  readonly children = new Map<number, RadixNode>();
  /** Number of sequences whose cached prefix runs through this node; 0 means evictable. */
  lockRef = 0;
  lastAccess: number;
  heapIndex = -1;

  constructor(
    parent: RadixNode | null,
    tokens: Int32Array,
    slots: Int32Array,
    length: number,
    lastAccess: number,
  ) {
    this.parent = parent;
    this.tokens = tokens;
    this.slots = slots;
    this.length = length;
    this.depth = (parent === null ? 0 : parent.depth) + length;
    this.lastAccess = lastAccess;
  }

  /**
   * Cut this node after its first `at` tokens: a new node takes `[0, at)` and becomes this node's parent;
   * this node keeps `[at, length)`. The new node inherits the lock count (every sequence through this
   * node also runs through it) and the access time. Returns the new upper node.
   */
  splitAt(at: number): RadixNode {
    const parent = this.parent!;
    const upper = new RadixNode(
      parent,
      this.tokens.subarray(0, at),
      this.slots.subarray(0, at),
      at,
      this.lastAccess,
    );
    upper.lockRef = this.lockRef;
    parent.children.set(this.tokens[0], upper);
    this.tokens = this.tokens.subarray(at);
    this.slots = this.slots.subarray(at);
    this.length -= at;
    this.parent = upper;
    upper.children.set(this.tokens[0], this);
    return upper;
  }

  /** Append tokens and slots at the end (only done to a leaf), growing the arrays geometrically. */
  append(tokens: Int32Array, slots: Int32Array, from: number, to: number): void {
    const needed = this.length + (to - from);
    if (needed > this.tokens.length) {
      const capacity = Math.max(needed, this.tokens.length * 2);
      this.tokens = grow(this.tokens, this.length, capacity);
      this.slots = grow(this.slots, this.length, capacity);
    }
    for (let i = from, j = this.length; i < to; i++, j++) {
      this.tokens[j] = tokens[i];
      this.slots[j] = slots[i];
    }
    this.length = needed;
    this.depth += to - from;
  }
}

function grow(array: Int32Array, used: number, capacity: number): Int32Array {
  const next = new Int32Array(capacity);
  next.set(array.subarray(0, used));
  return next;
}
