import type { KvCacheManager, Scheduler } from '@ferrum/interfaces';
import { createKvCacheManager } from '@ferrum/kv';
import { createScheduler, type SchedulerOptions } from '../../src/index.js';
import { FAKE_VOCAB_SIZE } from './fake-runtime.js';
import { Harness } from './harness.js';
import { NaiveKvCacheManager } from './naive-kv-cache-manager.js';

/** Which KvCacheManager a test runs over: the real radix one, or the naive reference without caching. */
export type KvKind = 'radix' | 'naive';

export interface Setup {
  readonly kv: KvCacheManager;
  readonly scheduler: Scheduler;
  readonly harness: Harness;
}

/** A scheduler over a fresh pool, with a harness playing the engine (the async one with `overlap`). */
export function setup(
  options: Partial<SchedulerOptions> & {
    numSlots: number;
    numHostSlots?: number;
    kv?: KvKind;
    overlap?: boolean;
  },
): Setup {
  const { numSlots, numHostSlots = 0, kv: kind = 'radix', overlap = false, ...rest } = options;
  const kv =
    kind === 'radix'
      ? createKvCacheManager({ numSlots, numHostSlots, enablePrefixCaching: true })
      : new NaiveKvCacheManager(numSlots, numHostSlots);
  const schedulerOptions: SchedulerOptions = {
    maxNumSeqs: 8,
    maxNumBatchedTokens: 32,
    maxModelLen: Math.min(numSlots, 128),
    watermark: 0,
    ...rest,
  };
  const scheduler = createScheduler(schedulerOptions, kv);
  const harness = new Harness(scheduler, kv, schedulerOptions, numHostSlots, overlap);
  return { kv, scheduler, harness };
}

/** `length` pseudo-random prompt tokens, none of them the fake EOS (0); different salts differ. */
export function prompt(length: number, salt = 1): number[] {
  return Array.from({ length }, (_, i) => {
    let h = Math.imul(salt * 65_537 + i, 0x9e3779b1);
    h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
    return 1 + (((h ^ (h >>> 13)) >>> 0) % (FAKE_VOCAB_SIZE - 1));
  });
}
