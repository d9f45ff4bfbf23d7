import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LruHeap } from './lru-heap.js';

interface Entry {
  lastAccess: number;
  heapIndex: number;
  id: number;
}

describe('LruHeap', () => {
  it('pops in access order after arbitrary pushes and removals (against a sorted array)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 50 }), fc.nat()), { maxLength: 200 }),
        (ops) => {
          const heap = new LruHeap<Entry>();
          let reference: Entry[] = [];
          ops.forEach(([push, key, pick], id) => {
            if (push || reference.length === 0) {
              const entry = { lastAccess: key, heapIndex: -1, id };
              heap.push(entry);
              reference.push(entry);
            } else {
              const victim = reference[pick % reference.length];
              heap.remove(victim);
              reference = reference.filter((e) => e !== victim);
            }
            heap.checkIntegrity();
          });
          const popped: number[] = [];
          for (let e = heap.pop(); e !== undefined; e = heap.pop()) popped.push(e.lastAccess);
          expect(popped).toEqual(reference.map((e) => e.lastAccess).sort((a, b) => a - b));
        },
      ),
    );
  });

  it('marks removed entries as outside the heap', () => {
    const heap = new LruHeap<Entry>();
    const a = { lastAccess: 1, heapIndex: -1, id: 0 };
    heap.push(a);
    expect(a.heapIndex).toBe(0);
    heap.remove(a);
    expect(a.heapIndex).toBe(-1);
    expect(heap.size).toBe(0);
    expect(heap.pop()).toBeUndefined();
  });
});
