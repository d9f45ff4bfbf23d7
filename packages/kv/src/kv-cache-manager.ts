import type { KvCacheManager, KvCacheStats, KvSwapPlan } from '@ferrum/interfaces';
import { FerrumError } from '@ferrum/types';
import { checkKvIntegrity } from './check-integrity.js';
import { RadixTree } from './radix-tree.js';
import { SequenceRecord } from './sequence-record.js';
import { SlotPool } from './slot-pool.js';

/** Options of {@link createKvCacheManager}. */
export interface KvCacheManagerOptions {
  /** Device slots in the KV pool (tokens, page size 1). A positive integer. */
  readonly numSlots: number;
  /** Host (swap) slots; 0 (default) disables swapping. */
  readonly numHostSlots?: number;
  /** Share KV between sequences through the radix tree (default true). */
  readonly enablePrefixCaching?: boolean;
}

/**
 * Create the slot owner of a KV token pool. Device-free: it only does accounting and plans copies, which
 * the runtime's `KvStorage` carries out. See the package README for the sharing, fork and swap rules.
 */
export function createKvCacheManager(options: KvCacheManagerOptions): KvCacheManager {
  return new RadixKvCacheManager(options);
}

class RadixKvCacheManager implements KvCacheManager {
  readonly specificationVersion = 'v1' as const;
  readonly numSlots: number;
  private readonly pool: SlotPool;
  private readonly hostPool: SlotPool;
  private readonly tree: RadixTree;
  private readonly prefixCaching: boolean;
  /** Per device slot: how many sequences hold it privately (0 when free or owned by the tree). */
  private readonly slotRefs: Int32Array;
  private readonly sequences = new Map<string, SequenceRecord>();
  private prefixHitTokens = 0;
  private prefixQueryTokens = 0;
  private numEvictedSlots = 0;

  constructor(options: KvCacheManagerOptions) {
    const numHostSlots = options.numHostSlots ?? 0;
    requireCount('numSlots', options.numSlots, 1);
    requireCount('numHostSlots', numHostSlots, 0);
    this.numSlots = options.numSlots;
    this.pool = new SlotPool(options.numSlots);
    this.hostPool = new SlotPool(numHostSlots);
    this.tree = new RadixTree(this.pool);
    this.prefixCaching = options.enablePrefixCaching ?? true;
    this.slotRefs = new Int32Array(options.numSlots);
  }

  numAvailableSlots(): number {
    return this.pool.numFree + this.tree.evictableSize;
  }

  addSequence(seqId: string, tokenIds: ArrayLike<number>): number {
    if (this.sequences.has(seqId))
      throw new FerrumError('invalid_argument', `sequence ${seqId} already exists`);
    if (tokenIds.length < 1)
      throw new FerrumError('invalid_argument', `sequence ${seqId} has an empty prompt`);
    const seq = new SequenceRecord(this.tree.root, tokenIds.length);
    this.sequences.set(seqId, seq);
    this.prefixQueryTokens += tokenIds.length;
    if (!this.prefixCaching) return 0;
    // The last prompt token is never matched: the step that computes it must produce the logits.
    const node = this.tree.match(tokenIds, tokenIds.length - 1);
    this.tree.lock(node, this.tree.tick());
    seq.lockedNode = node;
    seq.length = node.depth;
    this.tree.copyPathSlots(node, seq.slots);
    seq.recordTokens(tokenIds, node.depth);
    this.prefixHitTokens += node.depth;
    return node.depth;
  }

  canAllocate(numTokens: number): boolean {
    return numTokens <= this.numAvailableSlots();
  }

  allocate(seqId: string, numTokens: number): void {
    const seq = this.deviceSequence(seqId);
    requireCount('numTokens', numTokens, 0);
    this.reserve(numTokens);
    const start = seq.length;
    seq.reserveSlots(start + numTokens);
    this.pool.takeInto(seq.slots, start, numTokens);
    for (let p = start; p < start + numTokens; p++) this.slotRefs[seq.slots[p]] = 1;
    seq.length = start + numTokens;
  }

  slotsOf(seqId: string): Int32Array {
    const seq = this.deviceSequence(seqId);
    return seq.slots.subarray(0, seq.length);
  }

  readSlots(seqId: string, start: number, end: number, out: Int32Array, offset: number): void {
    const seq = this.deviceSequence(seqId);
    if (
      !Number.isSafeInteger(start) ||
      !Number.isSafeInteger(end) ||
      !Number.isSafeInteger(offset) ||
      start < 0 ||
      start > end ||
      end > seq.length ||
      offset < 0 ||
      offset + end - start > out.length
    ) {
      throw new FerrumError(
        'invalid_argument',
        `cannot read slots [${start}, ${end}) of sequence ${seqId} (${seq.length} slots) into ` +
          `[${offset}, ${offset + end - start}) of ${out.length}`,
      );
    }
    seq.copySlots(start, end, out, offset);
  }

  commit(seqId: string, tokenIds: ArrayLike<number>, numTokens = tokenIds.length): void {
    const seq = this.deviceSequence(seqId);
    requireCount('numTokens', numTokens, 0);
    if (numTokens > tokenIds.length || numTokens > seq.length) {
      throw new FerrumError(
        'invalid_argument',
        `cannot commit ${numTokens} tokens of sequence ${seqId}: ${tokenIds.length} given, ` +
          `it holds ${seq.length} slots`,
      );
    }
    seq.recordTokens(tokenIds, numTokens);
    if (this.prefixCaching) this.share(seq);
  }

  fork(parentId: string, childId: string): void {
    const parent = this.deviceSequence(parentId);
    if (this.sequences.has(childId))
      throw new FerrumError('invalid_argument', `sequence ${childId} already exists`);
    const child = parent.clone();
    this.tree.lock(child.lockedNode, this.tree.tick());
    for (let p = child.cachedLength; p < child.length; p++) this.slotRefs[child.slots[p]]++;
    this.sequences.set(childId, child);
  }

  free(seqId: string, options?: { readonly cache?: boolean }): void {
    const seq = this.sequence(seqId);
    if (seq.hostSlots !== null) {
      this.hostPool.giveRange(seq.hostSlots, 0, seq.hostSlots.length);
    } else {
      if ((options?.cache ?? true) && this.prefixCaching) this.share(seq);
      this.releasePrivate(seq);
    }
    this.tree.unlock(seq.lockedNode, this.tree.tick());
    this.sequences.delete(seqId);
  }

  canSwapOut(seqId: string): boolean {
    const seq = this.sequences.get(seqId);
    return (
      seq !== undefined && seq.hostSlots === null && seq.length - seq.cachedLength <= this.hostPool.numFree
    );
  }

  swapOut(seqId: string): KvSwapPlan {
    const seq = this.deviceSequence(seqId);
    const numPrivate = seq.length - seq.cachedLength;
    if (numPrivate > this.hostPool.numFree) {
      throw new FerrumError(
        'kv_exhausted',
        `host KV tier cannot take ${numPrivate} slots of sequence ${seqId} (${this.hostPool.numFree} free)`,
        { details: { tier: 'host', requested: numPrivate, available: this.hostPool.numFree } },
      );
    }
    const hostSlots = new Int32Array(numPrivate);
    this.hostPool.takeInto(hostSlots, 0, numPrivate);
    const deviceSlots = seq.slots.slice(seq.cachedLength, seq.length);
    this.releasePrivate(seq);
    seq.hostSlots = hostSlots;
    return { deviceSlots, hostSlots: hostSlots.slice() };
  }

  canSwapIn(seqId: string): boolean {
    const seq = this.sequences.get(seqId);
    return seq !== undefined && seq.hostSlots !== null && seq.hostSlots.length <= this.numAvailableSlots();
  }

  swapIn(seqId: string): KvSwapPlan {
    const seq = this.sequence(seqId);
    const hostSlots = seq.hostSlots;
    if (hostSlots === null) throw new FerrumError('invalid_argument', `sequence ${seqId} is not swapped out`);
    this.reserve(hostSlots.length);
    const start = seq.cachedLength;
    this.pool.takeInto(seq.slots, start, hostSlots.length);
    for (let p = start; p < seq.length; p++) this.slotRefs[seq.slots[p]] = 1;
    this.hostPool.giveRange(hostSlots, 0, hostSlots.length);
    seq.hostSlots = null;
    return { deviceSlots: seq.slots.slice(start, seq.length), hostSlots };
  }

  stats(): KvCacheStats {
    const numFreeSlots = this.pool.numFree;
    const numCachedSlots = this.tree.evictableSize;
    return {
      numSlots: this.numSlots,
      numFreeSlots,
      numCachedSlots,
      numUsedSlots: this.numSlots - numFreeSlots - numCachedSlots,
      numHostSlots: this.hostPool.capacity,
      numFreeHostSlots: this.hostPool.numFree,
      prefixHitTokens: this.prefixHitTokens,
      prefixQueryTokens: this.prefixQueryTokens,
      numEvictedSlots: this.numEvictedSlots,
    };
  }

  checkIntegrity(): void {
    checkKvIntegrity({
      pool: this.pool,
      hostPool: this.hostPool,
      tree: this.tree,
      slotRefs: this.slotRefs,
      sequences: this.sequences,
    });
  }

  /**
   * Move the sequence's committed positions that are still private into the tree. Stops at the first
   * slot a fork relative also holds: the tree may only take slots nobody else holds privately, so such
   * positions wait until the relatives are gone (or commit again before forking).
   */
  private share(seq: SequenceRecord): void {
    const from = seq.cachedLength;
    let to = from;
    while (to < seq.numCommitted && this.slotRefs[seq.slots[to]] === 1) this.slotRefs[seq.slots[to++]] = 0;
    if (to === from) return;
    const previous = seq.lockedNode;
    seq.lockedNode = this.tree.insert(previous, seq.tokens, seq.slots, from, to);
    // The path above `previous` is already locked by this sequence.
    this.tree.lock(seq.lockedNode, this.tree.tick(), previous);
  }

  /** Drop the sequence's hold on its private slots; slots nobody else holds become free. */
  private releasePrivate(seq: SequenceRecord): void {
    for (let p = seq.cachedLength; p < seq.length; p++) {
      const slot = seq.slots[p];
      if (--this.slotRefs[slot] === 0) this.pool.give(slot);
    }
  }

  /** Make `count` slots free, evicting cached ones in LRU order; throws `kv_exhausted` if impossible. */
  private reserve(count: number): void {
    const shortfall = count - this.pool.numFree;
    if (shortfall <= 0) return;
    if (shortfall > this.tree.evictableSize) {
      throw new FerrumError(
        'kv_exhausted',
        `KV pool cannot supply ${count} slots (${this.numAvailableSlots()} available of ${this.numSlots})`,
        { details: { tier: 'device', requested: count, available: this.numAvailableSlots() } },
      );
    }
    this.numEvictedSlots += this.tree.evict(shortfall);
  }

  private sequence(seqId: string): SequenceRecord {
    const seq = this.sequences.get(seqId);
    if (seq === undefined) throw new FerrumError('not_found', `unknown sequence ${seqId}`);
    return seq;
  }

  /** A sequence whose slots are on the device (not swapped out). */
  private deviceSequence(seqId: string): SequenceRecord {
    const seq = this.sequence(seqId);
    if (seq.hostSlots !== null) throw new FerrumError('invalid_argument', `sequence ${seqId} is swapped out`);
    return seq;
  }
}

function requireCount(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new FerrumError('invalid_argument', `${name} must be an integer >= ${min}, got ${value}`);
  }
}
