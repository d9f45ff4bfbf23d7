import { defineToken, type SpecificationVersion } from './injection-token.js';

/** Counters of a {@link KvCacheManager}. */
export interface KvCacheStats {
  readonly numSlots: number;
  readonly numFreeSlots: number;
  /** Slots held only by the prefix cache (evictable). */
  readonly numCachedSlots: number;
  /** Slots referenced by live sequences. */
  readonly numUsedSlots: number;
  readonly numHostSlots: number;
  readonly numFreeHostSlots: number;
  /** Prompt tokens served from the prefix cache since start. */
  readonly prefixHitTokens: number;
  /** Prompt tokens looked up since start. */
  readonly prefixQueryTokens: number;
  readonly numEvictedSlots: number;
}

/** Copies the runtime must perform (through `KvStorage`) to carry out a swap. */
export interface KvSwapPlan {
  readonly deviceSlots: Int32Array;
  readonly hostSlots: Int32Array;
}

/**
 * Owner of the KV token pool's slots (page size 1): the only component that allocates or frees them.
 * Keeps a radix tree over token ids for prefix reuse, with reference counts and LRU eviction.
 *
 * A sequence's slot list is `slotsOf(id)`: position p of the sequence lives in slot `slotsOf(id)[p]`.
 */
export interface KvCacheManager {
  readonly specificationVersion: SpecificationVersion;
  /** Device slots in the pool. */
  readonly numSlots: number;
  /** Slots that can be handed out now: free ones plus evictable cached ones. */
  numAvailableSlots(): number;
  /**
   * Register a sequence and match the longest cached prefix of `tokenIds` (its prompt). The matched slots
   * become the sequence's first slots and are locked against eviction. Returns how many tokens matched;
   * at least one prompt token is always left uncached so the step that computes it yields logits.
   */
  addSequence(seqId: string, tokenIds: ArrayLike<number>): number;
  /** Whether `numTokens` more slots can be given to `seqId` now (evicting if needed). Does not modify. */
  canAllocate(numTokens: number): boolean;
  /**
   * Append `numTokens` slots to the sequence. Returns them; the array is valid until the next mutating
   * call. Throws FerrumError `kv_exhausted` when the pool cannot supply them.
   */
  allocate(seqId: string, numTokens: number): Int32Array;
  /** The sequence's slots in position order; valid until the next mutating call. Does not modify. */
  slotsOf(seqId: string): Int32Array;
  /**
   * Record that the first `tokenIds.length` positions of the sequence hold computed KV for these ids,
   * making them shareable through the prefix cache.
   */
  commit(seqId: string, tokenIds: ArrayLike<number>): void;
  /** Make `childId` share all of `parentId`'s slots (reference-counted), for `n > 1`. */
  fork(parentId: string, childId: string): void;
  /**
   * Drop the sequence. With `cache` (default true) its committed tokens stay in the prefix cache,
   * unreferenced and evictable; everything else returns to the free list.
   */
  free(seqId: string, options?: { readonly cache?: boolean }): void;
  /** Plan moving the sequence's slots to the host tier; its device slots are freed. */
  swapOut(seqId: string): KvSwapPlan;
  /** Whether the swapped-out sequence can come back now. Does not modify. */
  canSwapIn(seqId: string): boolean;
  /** Plan bringing the sequence back to fresh device slots; its host slots are freed. */
  swapIn(seqId: string): KvSwapPlan;
  stats(): KvCacheStats;
  /** Throws when any slot is not exactly one of: free, cached, or owned (counting references). */
  checkIntegrity(): void;
}

export const KV_CACHE_MANAGER = defineToken<KvCacheManager>('KvCacheManagerV1');
