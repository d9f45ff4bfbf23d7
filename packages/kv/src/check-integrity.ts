import { FerrumError } from '@ferrum/types';
import type { RadixNode } from './radix-node.js';
import type { RadixTree } from './radix-tree.js';
import type { SequenceRecord } from './sequence-record.js';
import type { SlotPool } from './slot-pool.js';

/** The manager's state, as the integrity check reads it. */
export interface KvState {
  readonly pool: SlotPool;
  readonly hostPool: SlotPool;
  readonly tree: RadixTree;
  readonly slotRefs: Int32Array;
  readonly sequences: ReadonlyMap<string, SequenceRecord>;
}

const UNSEEN = 0;
const FREE = 1;
const CACHED = 2;
const PRIVATE = 3;

/**
 * Recount everything from scratch and throw FerrumError `internal` on the first inconsistency: every
 * device slot is exactly one of free, in the tree, or held privately (with `slotRefs` equal to the number
 * of holders); every host slot is free or held by exactly one swapped-out sequence; tree lock counts equal
 * the number of sequences whose path runs through each node; sequences agree with their tree paths.
 */
export function checkKvIntegrity(state: KvState): void {
  try {
    checkDevice(state);
    checkHost(state);
  } catch (error) {
    throw new FerrumError('internal', `KV integrity check failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function checkDevice({ pool, tree, slotRefs, sequences }: KvState): void {
  const kinds = new Uint8Array(pool.capacity);
  const claim = (slot: number, kind: number, owner: string): void => {
    if (!(slot >= 0 && slot < pool.capacity)) throw new Error(`${owner} holds out-of-range slot ${slot}`);
    if (kinds[slot] !== UNSEEN && !(kind === PRIVATE && kinds[slot] === PRIVATE)) {
      throw new Error(`slot ${slot} is both ${kindName(kinds[slot])} and ${kindName(kind)} (${owner})`);
    }
    kinds[slot] = kind;
  };
  for (const slot of pool.freeSlots()) claim(slot, FREE, 'the free list');

  const expectedLocks = new Map<RadixNode, number>();
  const holders = new Int32Array(pool.capacity);
  for (const [seqId, seq] of sequences) {
    checkSequencePath(tree, seqId, seq, expectedLocks);
    if (seq.hostSlots !== null) continue;
    for (let p = seq.cachedLength; p < seq.length; p++) {
      claim(seq.slots[p], PRIVATE, `sequence ${seqId}`);
      holders[seq.slots[p]]++;
    }
  }
  tree.checkStructure((node) => {
    const expected = expectedLocks.get(node) ?? 0;
    if (node.lockRef !== expected) {
      throw new Error(
        `node at depth ${node.depth} has lockRef ${node.lockRef}, ${expected} sequences use it`,
      );
    }
    for (let i = 0; i < node.length; i++) claim(node.slots[i], CACHED, `tree node at depth ${node.depth}`);
  });
  for (let slot = 0; slot < pool.capacity; slot++) {
    if (kinds[slot] === UNSEEN) throw new Error(`slot ${slot} leaked: neither free, cached nor held`);
    if (slotRefs[slot] !== holders[slot]) {
      throw new Error(`slot ${slot} has refcount ${slotRefs[slot]} but ${holders[slot]} holders`);
    }
  }
}

/** The sequence's first `cachedLength` positions must be exactly its locked tree path. */
function checkSequencePath(
  tree: RadixTree,
  seqId: string,
  seq: SequenceRecord,
  expectedLocks: Map<RadixNode, number>,
): void {
  if (!(seq.cachedLength <= seq.numCommitted && seq.numCommitted <= seq.length)) {
    throw new Error(
      `sequence ${seqId} has cached ${seq.cachedLength} > committed ${seq.numCommitted} > length ${seq.length}`,
    );
  }
  let node = seq.lockedNode;
  while (node !== tree.root) {
    const parent = node.parent;
    if (parent === null) throw new Error(`sequence ${seqId} locks a node that is no longer in the tree`);
    const start = node.depth - node.length;
    for (let i = 0; i < node.length; i++) {
      if (node.tokens[i] !== seq.tokens[start + i] || node.slots[i] !== seq.slots[start + i]) {
        throw new Error(`sequence ${seqId} disagrees with its tree path at position ${start + i}`);
      }
    }
    expectedLocks.set(node, (expectedLocks.get(node) ?? 0) + 1);
    node = parent;
  }
}

function checkHost({ hostPool, sequences }: KvState): void {
  const seen = new Uint8Array(hostPool.capacity);
  const claim = (slot: number, owner: string): void => {
    if (!(slot >= 0 && slot < hostPool.capacity))
      throw new Error(`${owner} holds out-of-range host slot ${slot}`);
    if (seen[slot] !== 0) throw new Error(`host slot ${slot} is claimed twice (${owner})`);
    seen[slot] = 1;
  };
  for (const slot of hostPool.freeSlots()) claim(slot, 'the host free list');
  for (const [seqId, seq] of sequences) {
    if (seq.hostSlots === null) continue;
    if (seq.hostSlots.length !== seq.length - seq.cachedLength) {
      throw new Error(
        `swapped sequence ${seqId} keeps ${seq.hostSlots.length} host slots for ${seq.length - seq.cachedLength} positions`,
      );
    }
    for (const slot of seq.hostSlots) claim(slot, `sequence ${seqId}`);
  }
  const missing = seen.indexOf(0);
  if (missing >= 0) throw new Error(`host slot ${missing} leaked`);
}

function kindName(kind: number): string {
  return ['unseen', 'free', 'cached', 'private'][kind];
}
