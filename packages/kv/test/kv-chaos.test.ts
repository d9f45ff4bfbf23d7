import type { KvCacheManager } from '@ferrum/interfaces';
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { createKvCacheManager } from '../src/index.js';

interface Live {
  tokens: number[];
  /** Tokens whose KV exists (prefilled or decoded); the rest of `tokens` still needs a prefill. */
  computed: number;
  target: number;
  swapped: boolean;
}

/**
 * A toy continuous-batching loop: admits requests while usage is under `pressure`, prefills, decodes one
 * token per step, preempts by swap or recompute when the pool is short, forks, and aborts at random.
 */
function chaos(kv: KvCacheManager, seed: number, pressure: number, steps: number) {
  const rand = seededRandom(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const systemPrompts = Array.from({ length: 4 }, () => Array.from({ length: 20 + int(60) }, () => int(500)));
  const live = new Map<string, Live>();
  let nextId = 0;
  let peakUsage = 0;
  let preemptions = 0;

  const admit = (tokens: number[], target: number) => {
    const id = `r${nextId++}`;
    const matched = kv.addSequence(id, tokens);
    live.set(id, { tokens, computed: matched, target, swapped: false });
  };
  const preempt = (id: string, seq: Live) => {
    preemptions++;
    if (kv.canSwapOut(id)) {
      kv.swapOut(id);
      seq.swapped = true;
    } else {
      kv.free(id, { cache: rand() < 0.5 }); // recompute: start over from the prompt cache
      live.delete(id);
      admit(seq.tokens, seq.target);
    }
  };

  for (let step = 0; step < steps; step++) {
    // Admit while used slots plus pending prefills stay under the target; decoding then overshoots it.
    let demand = kv.stats().numUsedSlots;
    for (const seq of live.values()) demand += seq.tokens.length - seq.computed;
    while (demand < pressure * kv.numSlots) {
      const system = systemPrompts[int(systemPrompts.length)];
      const prompt = [
        ...system.slice(0, int(system.length + 1)),
        ...Array.from({ length: 1 + int(40) }, () => int(500)),
      ];
      admit(prompt, prompt.length + 1 + int(80));
      demand += prompt.length - live.get(`r${nextId - 1}`)!.computed;
    }
    for (const [id, seq] of live) {
      if (seq.swapped) {
        if (kv.canSwapIn(id)) {
          kv.swapIn(id);
          seq.swapped = false;
        }
        continue;
      }
      // Prefill the rest of the known tokens, or decode one new token.
      const need = Math.max(1, seq.tokens.length - seq.computed);
      if (!kv.canAllocate(need)) {
        preempt(id, seq);
        continue;
      }
      kv.allocate(id, need);
      if (seq.computed + need > seq.tokens.length) seq.tokens.push(int(500));
      seq.computed += need;
      kv.commit(id, seq.tokens.slice(0, seq.computed));
      if (rand() < 0.01 && kv.canAllocate(1)) {
        const child = `r${nextId++}`;
        kv.fork(id, child);
        live.set(child, { ...seq, tokens: seq.tokens.slice() });
      }
    }
    for (const [id, seq] of live) {
      const aborted = rand() < 0.02;
      if (aborted || (!seq.swapped && seq.computed >= seq.target)) {
        kv.free(id, { cache: !aborted || rand() < 0.5 });
        live.delete(id);
      }
    }
    const stats = kv.stats();
    peakUsage = Math.max(peakUsage, stats.numUsedSlots / stats.numSlots);
    if (step % 25 === 0) kv.checkIntegrity();
  }
  for (const id of live.keys()) kv.free(id, { cache: rand() < 0.5 });
  return { peakUsage, preemptions };
}

describe('KV chaos: random requests, aborts, preemption under pressure', () => {
  for (const pressure of [0.7, 0.9, 0.98]) {
    for (const seed of [1, 2, 3]) {
      it(`returns the whole pool at ${pressure * 100}% pressure (seed ${seed})`, () => {
        const kv = createKvCacheManager({ numSlots: 4096, numHostSlots: 1024 });
        const { peakUsage, preemptions } = chaos(kv, seed, pressure, 300);
        kv.checkIntegrity();
        const stats = kv.stats();
        expect(stats.numUsedSlots).toBe(0);
        expect(stats.numFreeSlots + stats.numCachedSlots).toBe(stats.numSlots);
        expect(stats.numFreeHostSlots).toBe(stats.numHostSlots);
        expect(peakUsage).toBeGreaterThanOrEqual(pressure); // the run really was under pressure
        expect(stats.prefixHitTokens).toBeGreaterThan(0);
        if (pressure > 0.9) {
          expect(stats.numEvictedSlots).toBeGreaterThan(0);
          expect(preemptions).toBeGreaterThan(0);
        }
      });
    }
  }
});
