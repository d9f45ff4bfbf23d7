/**
 * A deliberately naive model of the KV manager for property tests: the prefix cache is a map from every
 * cached token prefix (joined to a string) to its last use; matching is a linear walk over prefixes;
 * eviction removes one unlocked leaf token at a time, least recently used first. Private slots are
 * modelled as shared `Cell` objects with holder counts, so fork sharing needs no slot ids at all.
 */
interface Cell {
  holders: number;
}

interface ModelSequence {
  /** Committed (or matched) token ids. */
  tokens: number[];
  length: number;
  cached: number;
  /** One cell per private position `[cached, length)`; null while swapped out. */
  cells: Cell[] | null;
}

const key = (tokens: readonly number[], length: number): string => tokens.slice(0, length).join(',');

export class ReferenceKvModel {
  readonly sequences = new Map<string, ModelSequence>();
  /** prefix → logical time of last use. */
  private readonly cache = new Map<string, number>();
  private clock = 0;
  hostUsed = 0;
  hits = 0;
  queries = 0;

  constructor(
    readonly numSlots: number,
    readonly numHostSlots: number,
    readonly prefixCaching: boolean,
  ) {}

  /** Tokens in the cache that no live sequence's cached prefix covers. */
  evictable(): number {
    const locked = this.lockedKeys();
    let count = 0;
    for (const k of this.cache.keys()) if (!locked.has(k)) count++;
    return count;
  }

  free(): number {
    const cells = new Set<Cell>();
    for (const seq of this.sequences.values()) for (const cell of seq.cells ?? []) cells.add(cell);
    return this.numSlots - this.cache.size - cells.size;
  }

  add(seqId: string, prompt: readonly number[]): number {
    this.queries += prompt.length;
    let matched = 0;
    if (this.prefixCaching) {
      while (matched < prompt.length - 1 && this.cache.has(key(prompt, matched + 1))) matched++;
    }
    this.touch(prompt, 0, matched);
    this.hits += matched;
    this.sequences.set(seqId, {
      tokens: prompt.slice(0, matched),
      length: matched,
      cached: matched,
      cells: [],
    });
    return matched;
  }

  /** Whether `count` slots can be had; if so the caller passes how many the manager evicted. */
  canReserve(count: number): boolean {
    return count <= this.free() + this.evictable();
  }

  /** Check the manager's eviction amount against the shortfall and evict that many tokens in LRU order. */
  reserve(count: number, evicted: number): void {
    const shortfall = Math.max(0, count - this.free());
    if (evicted < shortfall || (shortfall === 0 && evicted > 0) || evicted > this.evictable()) {
      throw new Error(`manager evicted ${evicted} for a shortfall of ${shortfall}`);
    }
    for (let i = 0; i < evicted; i++) this.evictOne();
  }

  allocate(seqId: string, count: number): void {
    const seq = this.sequences.get(seqId)!;
    for (let i = 0; i < count; i++) seq.cells!.push({ holders: 1 });
    seq.length += count;
  }

  commit(seqId: string, tokens: readonly number[]): void {
    const seq = this.sequences.get(seqId)!;
    if (tokens.length > seq.tokens.length) seq.tokens = tokens.slice();
    if (this.prefixCaching) this.share(seq);
  }

  fork(parentId: string, childId: string): void {
    const parent = this.sequences.get(parentId)!;
    for (const cell of parent.cells!) cell.holders++;
    this.sequences.set(childId, { ...parent, tokens: parent.tokens.slice(), cells: parent.cells!.slice() });
    this.touch(parent.tokens, 0, parent.cached);
  }

  release(seqId: string, cache: boolean): void {
    const seq = this.sequences.get(seqId)!;
    if (seq.cells === null) this.hostUsed -= seq.length - seq.cached;
    else {
      if (cache && this.prefixCaching) this.share(seq);
      for (const cell of seq.cells!) cell.holders--;
    }
    this.touch(seq.tokens, 0, seq.cached);
    this.sequences.delete(seqId);
  }

  canSwapOut(seqId: string): boolean {
    const seq = this.sequences.get(seqId)!;
    return seq.cells !== null && seq.length - seq.cached <= this.numHostSlots - this.hostUsed;
  }

  swapOut(seqId: string): void {
    const seq = this.sequences.get(seqId)!;
    for (const cell of seq.cells!) cell.holders--;
    seq.cells = null;
    this.hostUsed += seq.length - seq.cached;
  }

  swapIn(seqId: string): void {
    const seq = this.sequences.get(seqId)!;
    seq.cells = Array.from({ length: seq.length - seq.cached }, () => ({ holders: 1 }));
    this.hostUsed -= seq.length - seq.cached;
  }

  /** Committed private positions enter the cache up to the first one a fork relative also holds. */
  private share(seq: ModelSequence): void {
    let end = seq.cached;
    while (end < seq.tokens.length && seq.cells![end - seq.cached].holders === 1) end++;
    if (end === seq.cached) return;
    for (const cell of seq.cells!.splice(0, end - seq.cached)) cell.holders--;
    this.touch(seq.tokens, seq.cached, end); // adds the prefixes not cached yet
    seq.cached = end;
  }

  private touch(tokens: readonly number[], from: number, to: number): void {
    const now = ++this.clock;
    for (let p = from; p < to; p++) this.cache.set(key(tokens, p + 1), now);
  }

  private lockedKeys(): Set<string> {
    const locked = new Set<string>();
    for (const seq of this.sequences.values())
      for (let p = 1; p <= seq.cached; p++) locked.add(key(seq.tokens, p));
    return locked;
  }

  /** Remove the least recently used unlocked prefix that no other cached prefix extends. */
  private evictOne(): void {
    const locked = this.lockedKeys();
    const extended = new Set<string>();
    for (const k of this.cache.keys()) {
      const cut = k.lastIndexOf(',');
      if (cut >= 0) extended.add(k.slice(0, cut));
    }
    let victim: string | undefined;
    let oldest = Number.POSITIVE_INFINITY;
    let tie = false;
    for (const [k, time] of this.cache) {
      if (locked.has(k) || extended.has(k)) continue;
      if (time < oldest) [victim, oldest, tie] = [k, time, false];
      else if (time === oldest) tie = true;
    }
    if (victim === undefined || tie) throw new Error('reference model: no unique eviction candidate');
    this.cache.delete(victim);
  }
}
