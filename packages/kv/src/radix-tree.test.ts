import { describe, expect, it } from 'vitest';
import { RadixTree } from './radix-tree.js';
import { SlotPool } from './slot-pool.js';

/** A tree whose pool has handed out `numSlots` slots, plus a helper to insert a run of tokens. */
function setup(numSlots: number) {
  const pool = new SlotPool(numSlots);
  const tree = new RadixTree(pool);
  const insert = (tokens: number[]) => {
    const slots = new Int32Array(tokens.length);
    pool.takeInto(slots, 0, tokens.length);
    const node = tree.insert(tree.root, Int32Array.from(tokens), slots, 0, tokens.length);
    return { node, slots };
  };
  const check = () => tree.checkStructure(() => {});
  return { pool, tree, insert, check };
}

describe('RadixTree', () => {
  it('splits a node when a match ends inside it and keeps the slots in place', () => {
    const { tree, insert, check } = setup(16);
    const { slots } = insert([1, 2, 3, 4, 5]);
    const node = tree.match([1, 2, 3, 9], 4);
    expect(node.depth).toBe(3);
    expect([...node.slots.subarray(0, node.length)]).toEqual([...slots.subarray(0, 3)]);
    const lower = node.children.get(4)!;
    expect(lower.depth).toBe(5);
    expect([...lower.tokens.subarray(0, lower.length)]).toEqual([4, 5]);
    check();
  });

  it('splits when an insert diverges inside a node and frees duplicate slots', () => {
    const { pool, tree, insert, check } = setup(16);
    const first = insert([1, 2, 3, 4]);
    const before = pool.numFree;
    const second = insert([1, 2, 7]);
    // Three slots were taken, but positions 0 and 1 were cached already: those two went back.
    expect(pool.numFree).toBe(before - 3 + 2);
    expect([...second.slots.subarray(0, 2)]).toEqual([...first.slots.subarray(0, 2)]);
    expect(second.node.depth).toBe(3);
    const branch = tree.root.children.get(1)!;
    expect(branch.length).toBe(2);
    expect([...branch.children.keys()].sort()).toEqual([3, 7]);
    check();
  });

  it('respects the match limit', () => {
    const { tree, insert } = setup(8);
    insert([1, 2, 3]);
    expect(tree.match([1, 2, 3], 2).depth).toBe(2);
    expect(tree.match([1, 2, 3], 0)).toBe(tree.root);
  });

  it('grows a leaf locked by one caller in place instead of chaining nodes', () => {
    const { pool, tree, check } = setup(16);
    const tokens = Int32Array.from([1, 2, 3, 4, 5, 6]);
    const slots = new Int32Array(6);
    pool.takeInto(slots, 0, 6);
    let node = tree.insert(tree.root, tokens, slots, 0, 2);
    tree.lock(node, tree.tick());
    for (let end = 3; end <= 6; end++) {
      const next = tree.insert(node, tokens, slots, end - 1, end);
      expect(next).toBe(node);
      node = next;
    }
    expect(node.depth).toBe(6);
    expect(tree.root.children.size).toBe(1);
    expect(tree.protectedSize).toBe(6);
    check();
  });

  it('does not grow a leaf another caller also locks', () => {
    const { pool, tree, check } = setup(16);
    const tokens = Int32Array.from([1, 2, 3]);
    const slots = new Int32Array(3);
    pool.takeInto(slots, 0, 3);
    const node = tree.insert(tree.root, tokens, slots, 0, 2);
    tree.lock(node, tree.tick());
    tree.lock(node, tree.tick());
    const child = tree.insert(node, tokens, slots, 2, 3);
    expect(child).not.toBe(node);
    expect(child.parent).toBe(node);
    expect(node.depth).toBe(2);
    tree.lock(child, tree.tick(), node);
    check();
  });

  it('evicts least recently used leaves first, parents after their children', () => {
    const { pool, tree, insert, check } = setup(9);
    const a = insert([1, 2, 3]).node;
    const b = insert([4, 5, 6]).node;
    const c = insert([4, 5, 7]).node;
    // Touch order: b, a, c (oldest first). b and c share the node [4, 5].
    for (const node of [b, a, c]) {
      tree.lock(node, tree.tick());
      tree.unlock(node, tree.tick());
    }
    expect(tree.evict(1)).toBe(1); // [6] (b's leaf)
    expect(tree.match([4, 5, 6], 3).depth).toBe(2);
    expect(tree.evict(1)).toBe(3); // a's whole node [1, 2, 3]
    expect(tree.match([1, 2, 3], 3).depth).toBe(0);
    expect(tree.evict(10)).toBe(3); // [7], then [4, 5] once it became a leaf
    expect(pool.numFree).toBe(9);
    expect(tree.evictableSize).toBe(0);
    check();
  });

  it('never evicts locked nodes', () => {
    const { tree, insert, check } = setup(6);
    const a = insert([1, 2, 3]).node;
    insert([4, 5, 6]);
    tree.lock(a, tree.tick());
    expect(tree.evict(6)).toBe(3);
    expect(tree.match([1, 2, 3], 3).depth).toBe(3);
    expect(tree.evict(1)).toBe(0);
    tree.unlock(a, tree.tick());
    expect(tree.evict(1)).toBe(3);
    check();
  });
});
