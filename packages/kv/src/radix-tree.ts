import { LruHeap } from './lru-heap.js';
import { RadixNode } from './radix-node.js';
import type { SlotPool } from './slot-pool.js';

/**
 * Radix tree over token ids whose edges carry KV slots (RadixAttention). It owns the slots stored in it;
 * sequences borrow them by locking a node, which pins the whole path from that node to the root.
 *
 * Invariants (proved by {@link RadixTree.checkStructure}):
 * - a node's children are keyed by their first token and every non-root node holds at least one token;
 * - `lockRef` counts the sequences whose path runs through the node, so it never drops below its
 *   children's sum, and nodes with `lockRef === 0` form whole subtrees (evictable bottom-up);
 * - the LRU heap holds exactly the unlocked non-root leaves;
 * - `evictableSize` / `protectedSize` are the token counts of unlocked / locked nodes.
 *
 * Access times come from a logical clock ({@link RadixTree.tick}), so eviction order is deterministic.
 */
export class RadixTree {
  readonly root = new RadixNode(null, new Int32Array(0), new Int32Array(0), 0, 0);
  /** Tokens in unlocked nodes: what eviction can give back. */
  evictableSize = 0;
  /** Tokens in nodes locked by at least one sequence. */
  protectedSize = 0;
  private readonly heap = new LruHeap<RadixNode>();
  private readonly pool: SlotPool;
  private clock = 0;

  /** `pool` receives the slots of evicted nodes and of duplicates found while inserting. */
  constructor(pool: SlotPool) {
    this.pool = pool;
  }

  /** Advance the logical clock; every operation that uses nodes stamps them with one tick. */
  tick(): number {
    return ++this.clock;
  }

  /**
   * Find the longest cached prefix of `tokens[0..maxLength)`. When it ends inside a node, that node is
   * split so the match ends on a node boundary. Returns the last matched node (the root when nothing
   * matched); its `depth` is the matched length. Does not lock.
   */
  match(tokens: ArrayLike<number>, maxLength: number): RadixNode {
    let node = this.root;
    let position = 0;
    while (position < maxLength) {
      const child = node.children.get(tokens[position]);
      if (child === undefined) break;
      const common = commonLength(child, tokens, position, maxLength);
      if (common < child.length) return child.splitAt(common);
      node = child;
      position += common;
    }
    return node;
  }

  /**
   * Insert `tokens[from..to)` held in `slots[from..to)` below `node`, whose depth is `from` and which the
   * caller has locked (or the root). Where the tree already holds a position, the tree's slot wins: the
   * caller's slot goes back to the pool and `slots[p]` is overwritten with the cached one. Takes ownership
   * of the caller's other slots. Returns the node ending at `to`; new nodes start unlocked (evictable)
   * until the caller locks them.
   *
   * A leaf locked by the caller alone grows in place instead of gaining a child, so a decoding sequence
   * that commits one token per step keeps one node rather than a chain of one-token nodes.
   */
  insert(node: RadixNode, tokens: Int32Array, slots: Int32Array, from: number, to: number): RadixNode {
    let current = node;
    let position = from;
    if (current !== this.root && current.lockRef === 1 && current.children.size === 0 && from < to) {
      current.append(tokens, slots, from, to);
      this.protectedSize += to - from;
      return current;
    }
    while (position < to) {
      const child = current.children.get(tokens[position]);
      if (child === undefined) return this.addLeaf(current, tokens, slots, position, to);
      const common = commonLength(child, tokens, position, to);
      for (let i = 0; i < common; i++) {
        this.pool.give(slots[position + i]);
        slots[position + i] = child.slots[i];
      }
      current = common < child.length ? child.splitAt(common) : child;
      position += common;
    }
    return current;
  }

  /** Copy the slots along the path root → `node` into `out[0..node.depth)`. */
  copyPathSlots(node: RadixNode, out: Int32Array): void {
    for (let n = node; n !== this.root; n = n.parent!) {
      const start = n.depth - n.length;
      for (let i = 0; i < n.length; i++) out[start + i] = n.slots[i];
    }
  }

  /** Lock every node from `node` up to, not including, `stop` (an ancestor, the root by default). */
  lock(node: RadixNode, now: number, stop: RadixNode = this.root): void {
    for (let n = node; n !== stop; n = n.parent!) {
      if (n.lockRef++ === 0) {
        this.evictableSize -= n.length;
        this.protectedSize += n.length;
        if (n.heapIndex >= 0) this.heap.remove(n);
      }
      n.lastAccess = now;
    }
  }

  /** Undo one `lock(node)` of the whole path to the root, stamping it as used `now`. */
  unlock(node: RadixNode, now: number): void {
    for (let n = node; n !== this.root; n = n.parent!) {
      n.lastAccess = now;
      if (--n.lockRef === 0) {
        this.evictableSize += n.length;
        this.protectedSize -= n.length;
        if (n.children.size === 0) this.heap.push(n);
      }
    }
  }

  /**
   * Evict unlocked leaves, least recently used first, until at least `numSlots` slots went back to the
   * pool or nothing is evictable. Whole nodes go, so it may free more than asked. Returns slots freed.
   */
  evict(numSlots: number): number {
    let freed = 0;
    while (freed < numSlots) {
      const leaf = this.heap.pop();
      if (leaf === undefined) break;
      const parent = leaf.parent!;
      parent.children.delete(leaf.tokens[0]);
      leaf.parent = null;
      this.pool.giveRange(leaf.slots, 0, leaf.length);
      this.evictableSize -= leaf.length;
      freed += leaf.length;
      if (parent !== this.root && parent.lockRef === 0 && parent.children.size === 0) this.heap.push(parent);
    }
    return freed;
  }

  /**
   * Throw when a structural invariant (see the class comment) fails. Calls `visit` on every non-root
   * node so the caller can account for slots and lock counts.
   */
  checkStructure(visit: (node: RadixNode) => void): void {
    this.heap.checkIntegrity();
    let evictable = 0;
    let protectedTokens = 0;
    let unlockedLeaves = 0;
    const stack: RadixNode[] = [this.root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      let childLocks = 0;
      for (const [key, child] of node.children) {
        checkChild(node, key, child);
        childLocks += child.lockRef;
        stack.push(child);
      }
      if (node === this.root) continue;
      if (node.lockRef < childLocks)
        throw new Error(`node at depth ${node.depth} has fewer locks than its children`);
      if (node.lockRef === 0) evictable += node.length;
      else protectedTokens += node.length;
      const evictableLeaf = node.lockRef === 0 && node.children.size === 0;
      if (evictableLeaf) unlockedLeaves++;
      if (evictableLeaf !== node.heapIndex >= 0)
        throw new Error(`node at depth ${node.depth} misplaced in LRU heap`);
      visit(node);
    }
    if (unlockedLeaves !== this.heap.size) throw new Error('LRU heap holds nodes that are not in the tree');
    if (evictable !== this.evictableSize || protectedTokens !== this.protectedSize) {
      throw new Error(
        `tree sizes drifted: evictable ${this.evictableSize} (actual ${evictable}), protected ${this.protectedSize} (actual ${protectedTokens})`,
      );
    }
  }

  private addLeaf(
    parent: RadixNode,
    tokens: Int32Array,
    slots: Int32Array,
    from: number,
    to: number,
  ): RadixNode {
    const leaf = new RadixNode(parent, tokens.slice(from, to), slots.slice(from, to), to - from, this.clock);
    if (parent.heapIndex >= 0) this.heap.remove(parent);
    parent.children.set(tokens[from], leaf);
    this.evictableSize += leaf.length;
    this.heap.push(leaf);
    return leaf;
  }
}

/** Length of the common prefix of `node`'s tokens and `tokens[from..to)`. */
function commonLength(node: RadixNode, tokens: ArrayLike<number>, from: number, to: number): number {
  const limit = Math.min(node.length, to - from);
  const own = node.tokens;
  let i = 0;
  while (i < limit && own[i] === tokens[from + i]) i++;
  return i;
}

function checkChild(node: RadixNode, key: number, child: RadixNode): void {
  if (child.parent !== node) throw new Error(`child at depth ${child.depth} has a wrong parent link`);
  if (child.length < 1) throw new Error(`empty node at depth ${child.depth}`);
  if (child.tokens[0] !== key) throw new Error(`child keyed ${key} starts with token ${child.tokens[0]}`);
  if (child.depth !== node.depth + child.length) throw new Error(`node depth ${child.depth} is inconsistent`);
  if (child.tokens.length < child.length || child.slots.length < child.length) {
    throw new Error(`node at depth ${child.depth} is shorter than its length`);
  }
}
