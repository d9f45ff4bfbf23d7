/**
 * Token ids of text pieces by their text, holding at most `maxTokens` ids: the least recently used pieces are
 * dropped first. Stored arrays are never changed.
 */
export class SegmentCache {
  /** In use order: the least recently used first (a Map keeps insertion order). */
  private readonly entries = new Map<string, Int32Array>();
  private numTokens = 0;

  constructor(private readonly maxTokens: number) {}

  /** Ids held now. */
  get size(): number {
    return this.numTokens;
  }

  /** The ids of `text`, marking it used; undefined when not held. */
  get(text: string): Int32Array | undefined {
    const ids = this.entries.get(text);
    if (ids !== undefined) {
      this.entries.delete(text);
      this.entries.set(text, ids);
    }
    return ids;
  }

  /** Hold the ids of `text` (a piece larger than the whole cache is not held). */
  set(text: string, ids: Int32Array): void {
    if (ids.length > this.maxTokens) return;
    const old = this.entries.get(text);
    if (old !== undefined) {
      this.numTokens -= old.length;
      this.entries.delete(text);
    }
    this.entries.set(ownCopy(text), ids);
    this.numTokens += ids.length;
    for (const [key, value] of this.entries) {
      if (this.numTokens <= this.maxTokens) break;
      this.entries.delete(key);
      this.numTokens -= value.length;
    }
  }
}

/**
 * `text` in a string of its own. A piece cut from a rendered prompt with `slice` may be a V8 sliced string that
 * keeps the whole prompt alive; as a cache key it would hold every such prompt. UTF-16 keeps every code unit,
 * lone surrogates included, so the copy equals the original.
 */
function ownCopy(text: string): string {
  return Buffer.from(text, 'utf16le').toString('utf16le');
}
