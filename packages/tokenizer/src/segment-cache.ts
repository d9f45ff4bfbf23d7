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
    this.entries.set(text, ids);
    this.numTokens += ids.length;
    for (const [key, value] of this.entries) {
      if (this.numTokens <= this.maxTokens) break;
      this.entries.delete(key);
      this.numTokens -= value.length;
    }
  }
}
