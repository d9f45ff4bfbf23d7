import { describe, expect, it } from 'vitest';
import { SlotPool } from './slot-pool.js';

describe('SlotPool', () => {
  it('hands out every slot exactly once and takes them back', () => {
    const pool = new SlotPool(5);
    const out = new Int32Array(5);
    pool.takeInto(out, 0, 5);
    expect([...out].sort()).toEqual([0, 1, 2, 3, 4]);
    expect(pool.numFree).toBe(0);
    pool.giveRange(out, 1, 3);
    pool.give(out[4]);
    expect([...pool.freeSlots()].sort()).toEqual([out[1], out[2], out[4]].sort());
  });

  it('refuses to hand out more than it has', () => {
    const pool = new SlotPool(2);
    expect(() => pool.takeInto(new Int32Array(3), 0, 3)).toThrow(/3 slots with 2 free/);
  });
});
