/** What the heap needs from an entry: an ordering key and a slot to remember its own position. */
export interface HeapEntry {
  /** Logical time of the last use; smaller is older. */
  lastAccess: number;
  /** Position in the heap's array, or -1 when not in a heap. Owned by the heap. */
  heapIndex: number;
}

/**
 * Indexed binary min-heap on `lastAccess`. Entries record their own index, so removing an arbitrary
 * entry (a leaf that gets locked or gains a child) costs O(log n) without searching.
 */
export class LruHeap<T extends HeapEntry> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  push(entry: T): void {
    entry.heapIndex = this.items.length;
    this.items.push(entry);
    this.siftUp(entry.heapIndex);
  }

  /** Remove and return the least recently used entry, or undefined when empty. */
  pop(): T | undefined {
    const first = this.items[0];
    if (first !== undefined) this.remove(first);
    return first;
  }

  remove(entry: T): void {
    const index = entry.heapIndex;
    const last = this.items.pop()!;
    entry.heapIndex = -1;
    if (last === entry) return;
    this.items[index] = last;
    last.heapIndex = index;
    this.siftDown(index);
    this.siftUp(last.heapIndex);
  }

  /** Throws when an entry's recorded index or the heap order is wrong. */
  checkIntegrity(): void {
    const items = this.items;
    for (let i = 0; i < items.length; i++) {
      if (items[i].heapIndex !== i) throw new Error(`heap entry ${i} records index ${items[i].heapIndex}`);
      const parent = (i - 1) >> 1;
      if (i > 0 && items[parent].lastAccess > items[i].lastAccess) {
        throw new Error(`heap order broken between ${parent} and ${i}`);
      }
    }
  }

  private siftUp(start: number): void {
    const items = this.items;
    let index = start;
    const entry = items[index];
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex];
      if (parent.lastAccess <= entry.lastAccess) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = entry;
    entry.heapIndex = index;
  }

  private siftDown(start: number): void {
    const items = this.items;
    const count = items.length;
    let index = start;
    const entry = items[index];
    for (;;) {
      let child = 2 * index + 1;
      if (child >= count) break;
      if (child + 1 < count && items[child + 1].lastAccess < items[child].lastAccess) child++;
      if (items[child].lastAccess >= entry.lastAccess) break;
      items[index] = items[child];
      items[index].heapIndex = index;
      index = child;
    }
    items[index] = entry;
    entry.heapIndex = index;
  }
}
