import { compareSequences, type Sequence } from './sequence.js';

/**
 * Sequences kept sorted by {@link compareSequences} (best first), so the head is the next to run and the
 * tail the first to preempt. Backed by one array: queues hold at most a few thousand entries.
 */
export class SequenceQueue {
  private readonly items: Sequence[] = [];

  get length(): number {
    return this.items.length;
  }

  at(index: number): Sequence {
    return this.items[index];
  }

  /** Insert after every entry that does not sort after `seq`. */
  insert(seq: Sequence): void {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareSequences(this.items[mid], seq) <= 0) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, seq);
  }

  /** Remove `seq` (by identity); returns whether it was there. */
  remove(seq: Sequence): boolean {
    const index = this.items.lastIndexOf(seq);
    if (index < 0) return false;
    this.items.splice(index, 1);
    return true;
  }
}
