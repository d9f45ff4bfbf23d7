/**
 * Partial selection of the N largest entries of a row (N small: top logprobs), with a binary min-heap of
 * preallocated capacity: O(vocab × log N), no sort and no allocation of the row's size.
 * Order: larger value first, ties to the lower token id. Entries at -Infinity or NaN are never selected.
 */
export class TopNSelector {
  private heapIds: Int32Array;
  private heapValues: Float64Array;
  private size = 0;

  constructor(capacity = 20) {
    this.heapIds = new Int32Array(capacity);
    this.heapValues = new Float64Array(capacity);
  }

  /**
   * Select from `row` the `n` best among the ids `ids[0..count)` (ascending) or, when `ids` is null, among
   * all of `row`. Read the result with {@link TopNSelector.idAt} / {@link TopNSelector.valueAt}, best first;
   * {@link TopNSelector.count} may be below `n` when fewer entries are finite.
   */
  select(row: Float32Array, n: number, ids: Int32Array | null, count: number): void {
    if (n > this.heapIds.length) {
      this.heapIds = new Int32Array(n);
      this.heapValues = new Float64Array(n);
    }
    this.size = 0;
    if (n === 0) return;
    // Hot loop: `bar` is -inf while the heap fills, then its root (worst kept value), cached in a local so
    // that most entries cost one comparison. Equal to the root with a higher id (ids ascend): the root wins.
    let bar = Number.NEGATIVE_INFINITY;
    if (ids === null) {
      for (let id = 0; id < row.length; id++) if (row[id] > bar) bar = this.offer(id, row[id], n);
    } else {
      for (let j = 0; j < count; j++) if (row[ids[j]] > bar) bar = this.offer(ids[j], row[ids[j]], n);
    }
    this.sortDescending();
  }

  /** Add an entry (heap not full) or replace the root; returns the new bar: the root value, or -inf while not full. */
  private offer(id: number, value: number, n: number): number {
    if (this.size < n) this.push(id, value);
    else this.replaceRoot(id, value);
    return this.size < n ? Number.NEGATIVE_INFINITY : this.heapValues[0];
  }

  /** Number of selected entries. */
  get count(): number {
    return this.size;
  }

  /** Token id of the k-th best selected entry (0 = best). */
  idAt(k: number): number {
    return this.heapIds[k];
  }

  /** Value of the k-th best selected entry (0 = best). */
  valueAt(k: number): number {
    return this.heapValues[k];
  }

  /** True when (a) ranks below (b): smaller value, or equal value and higher id. */
  private below(a: number, b: number): boolean {
    const va = this.heapValues[a];
    const vb = this.heapValues[b];
    return va < vb || (va === vb && this.heapIds[a] > this.heapIds[b]);
  }

  private swap(a: number, b: number): void {
    const id = this.heapIds[a];
    const value = this.heapValues[a];
    this.heapIds[a] = this.heapIds[b];
    this.heapValues[a] = this.heapValues[b];
    this.heapIds[b] = id;
    this.heapValues[b] = value;
  }

  private push(id: number, value: number): void {
    let k = this.size++;
    this.heapIds[k] = id;
    this.heapValues[k] = value;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      if (!this.below(k, parent)) break;
      this.swap(k, parent);
      k = parent;
    }
  }

  private replaceRoot(id: number, value: number): void {
    this.heapIds[0] = id;
    this.heapValues[0] = value;
    this.siftDown(0, this.size);
  }

  private siftDown(start: number, size: number): void {
    let k = start;
    for (;;) {
      const left = 2 * k + 1;
      if (left >= size) return;
      const right = left + 1;
      const child = right < size && this.below(right, left) ? right : left;
      if (!this.below(child, k)) return;
      this.swap(child, k);
      k = child;
    }
  }

  /** Heap-sort in place: repeatedly move the worst entry to the end, leaving best first. */
  private sortDescending(): void {
    for (let end = this.size - 1; end > 0; end--) {
      this.swap(0, end);
      this.siftDown(0, end);
    }
  }
}
