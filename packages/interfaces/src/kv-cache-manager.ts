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

/**
 * Copies the runtime must perform (through `KvStorage`) to carry out a swap: slot `deviceSlots[i]` pairs
 * with `hostSlots[i]`. Fresh arrays owned by the caller; the manager never reuses them.
 */
export interface KvSwapPlan {
  readonly deviceSlots: Int32Array;
  readonly hostSlots: Int32Array;
}

/**
 * Owner of the KV token pool's slots (page size 1): the only component that allocates or frees them.
 * Keeps a radix tree over token ids for prefix reuse, with reference counts and LRU eviction.
 *
 * A sequence's slot list is `slotsOf(id)`: position p of the sequence lives in slot `slotsOf(id)[p]`.
 * The scheduler calls `allocate`, `readSlots` and `commit` for every sequence of every step, so those
 * allocate nothing (V8's young-generation pauses land on the step loop's thread); `slotsOf` makes a view
 * and is for inspection.
 *
 * Unknown sequence ids throw FerrumError `not_found`; using a swapped-out sequence where device slots are
 * needed (`allocate`, `slotsOf`, `readSlots`, `commit`, `fork`, `swapOut`) throws `invalid_argument`.
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
   * Throws `invalid_argument` for a duplicate id or an empty prompt.
   */
  addSequence(seqId: string, tokenIds: ArrayLike<number>): number;
  /** Whether `numTokens` more slots can be given to `seqId` now (evicting if needed). Does not modify. */
  canAllocate(numTokens: number): boolean;
  /**
   * Append `numTokens` slots to the sequence (read them with `readSlots`). Throws FerrumError
   * `kv_exhausted` when the pool cannot supply them.
   */
  allocate(seqId: string, numTokens: number): void;
  /**
   * A view of the sequence's slots in position order, made per call; valid until the next mutating call.
   * Does not modify. For inspection and tests: per-step readers use `readSlots`.
   */
  slotsOf(seqId: string): Int32Array;
  /**
   * Copy the slots of positions `[start, end)` of the sequence into `out[offset .. offset + end - start)`.
   * Does not modify the manager; allocates nothing. Throws `invalid_argument` when `0 <= start <= end <=`
   * (the sequence's slot count) does not hold or `out` is too short.
   */
  readSlots(seqId: string, start: number, end: number, out: Int32Array, offset: number): void;
  /**
   * Record that the first `numTokens` positions of the sequence (default `tokenIds.length`) hold computed
   * KV for `tokenIds[0 .. numTokens)`, making them shareable through the prefix cache. Call it for
   * in-progress sequences too (e.g. after each step), passing the sequence's whole token buffer and a
   * count rather than a view of it; the ids must agree with what was committed or matched before.
   *
   * Where the cache already holds the same tokens in other slots, the sequence switches to the cached
   * slots and its own return to the free list, so `slotsOf` may change for committed positions.
   * Positions whose slots are still shared with a fork relative (allocated before `fork` and not
   * committed before it) are shared only once no relative holds them; commit before forking for reuse.
   */
  commit(seqId: string, tokenIds: ArrayLike<number>, numTokens?: number): void;
  /**
   * Make `childId` share all of `parentId`'s slots (reference-counted), for `n > 1`. The child inherits
   * the parent's committed tokens; slots either allocates later are its own. Either may be freed first.
   */
  fork(parentId: string, childId: string): void;
  /**
   * Drop the sequence. With `cache` (default true) its committed tokens stay in the prefix cache,
   * unreferenced and evictable; everything else returns to the free list. With `cache: false` nothing
   * more enters the cache: what earlier `commit` calls shared stays cached (other sequences may use it),
   * every slot still private to the sequence is freed. Works for swapped-out sequences (host slots freed).
   */
  free(seqId: string, options?: { readonly cache?: boolean }): void;
  /**
   * Plan moving the sequence's private slots (those after its cached prefix) to the host tier and free
   * them on the device. The cached prefix stays on the device, locked, so swapping in only restores the
   * private part. Throws `kv_exhausted` (details `tier: 'host'`) when the host tier lacks room.
   */
  swapOut(seqId: string): KvSwapPlan;
  /** Whether `swapOut(seqId)` would succeed now (a device-resident sequence and enough host slots). */
  canSwapOut(seqId: string): boolean;
  /** Whether the swapped-out sequence can come back now. Does not modify. */
  canSwapIn(seqId: string): boolean;
  /**
   * Plan bringing the sequence back to fresh device slots (evicting cached ones if needed); its host
   * slots are freed. Throws `kv_exhausted` when the device pool cannot supply them.
   *
   * Freed slots can be handed out again at once, while the runtime runs a step's swap-outs before its
   * swap-ins: plan every `swapOut` of a step before its first `swapIn`, or a swap-out could overwrite host
   * slots this swap-in has yet to read.
   */
  swapIn(seqId: string): KvSwapPlan;
  stats(): KvCacheStats;
  /** Throws when any slot is not exactly one of: free, cached, or owned (counting references). */
  checkIntegrity(): void;
}

export const KV_CACHE_MANAGER = defineToken<KvCacheManager>('KvCacheManagerV1');
