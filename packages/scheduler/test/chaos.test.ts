import type { ScheduledStep } from '@ferrum/interfaces';
import { seededRandom } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { FAKE_EOS, referenceOutput } from './support/fake-runtime.js';
import type { Harness } from './support/harness.js';
import { type KvKind, setup } from './support/setup.js';
import { randomWorkload, type TimedRequest } from './support/workload.js';

const NUM_SLOTS = 8192;
const MAX_MODEL_LEN = 100;
const SHAPE = {
  numRequests: 400,
  maxPromptTokens: 60,
  maxOutputTokens: 40,
  arrivalSteps: 40,
  maxPriority: 2,
  forkFraction: 0.2,
};
const LIMITS = { maxNumSeqs: 256, maxNumBatchedTokens: 320, maxModelLen: MAX_MODEL_LEN };
/** Live states an abort has not hit yet are targeted first, so each gets aborted when it occurs. */
const ABORT_STATES = ['waiting', 'prefilling', 'decoding', 'preempted'];

interface Chaos {
  readonly pressure: number;
  readonly preemptionMode: 'recompute' | 'swap';
  readonly kv: KvKind;
  /** Chance per step of aborting a random live request. */
  readonly abortRate: number;
  /** Play the async engine loop: each step planned while the previous one is in flight. */
  readonly overlap: boolean;
}

/**
 * Play `workload` to the end; with `chaos`, a ballast pins that fraction of the pool and aborts strike.
 * `overlap` alone plays it unpressured with the async loop.
 */
function play(
  workload: readonly TimedRequest[],
  chaos?: Chaos & { seed: number },
  overlap = chaos?.overlap ?? false,
): Harness {
  const random = seededRandom(chaos?.seed ?? 0);
  const { kv, harness } = setup({
    ...LIMITS,
    numSlots: chaos ? NUM_SLOTS : 65_536,
    numHostSlots: chaos?.preemptionMode === 'swap' ? 2048 : 0,
    preemptionMode: chaos?.preemptionMode ?? 'recompute',
    watermark: 0.001,
    kv: chaos?.kv ?? 'radix',
    seed: 42,
    overlap,
  });
  const ballast = Math.round((chaos?.pressure ?? 0) * NUM_SLOTS);
  if (ballast > 0) {
    kv.addSequence('ballast', new Int32Array(ballast).fill(FAKE_EOS));
    kv.allocate('ballast', ballast);
  }
  let next = 0;
  const unaborted = new Set(ABORT_STATES);
  let peakUsed = 0;
  for (let step = 0; next < workload.length || harness.busy; step++) {
    if (step > 50_000) throw new Error('no end in 50000 steps');
    while (next < workload.length && workload[next].arrivalStep <= step) harness.add(workload[next++]);
    if (chaos && random() < chaos.abortRate) abortOne(harness, unaborted, random);
    // Some aborts land while a step is in flight, between schedule() and complete() (with overlap: while
    // one step runs and the next is built).
    const abortInFlight = (step: ScheduledStep) => {
      if (!chaos) return;
      if (random() < chaos.abortRate / 2) abortOne(harness, unaborted, random);
      // The first preempted and the first mid-prompt sequence seen are aborted, so both states are covered.
      for (const seqId of [...step.preempted, ...step.seqIds]) {
        const state = harness.scheduler.stateOf(seqId);
        if (state && unaborted.delete(state)) harness.abort(seqId.split('#')[0]);
      }
    };
    if (harness.busy && harness.step(abortInFlight) === null) {
      throw new Error('work left but nothing schedulable');
    }
    peakUsed = Math.max(peakUsed, kv.stats().numUsedSlots);
  }
  peakUsage.set(harness, peakUsed / NUM_SLOTS);
  if (ballast > 0) kv.free('ballast', { cache: false });
  return harness;
}

/** Peak fraction of the pool in use (ballast included) during each run. */
const peakUsage = new WeakMap<Harness, number>();

/** Abort a random live request, preferably one in a state of `unaborted` (which it then leaves). */
function abortOne(harness: Harness, unaborted: Set<string>, random: () => number): void {
  const live = [...harness.requests.keys()].filter((id) =>
    harness.outputSeqIds(id).some((s) => !harness.ends.has(s)),
  );
  const stateOf = (id: string) =>
    harness.scheduler.stateOf(harness.outputSeqIds(id)[0]) ?? harness.scheduler.stateOf(id);
  const preferred = live.filter((id) => unaborted.has(stateOf(id) ?? ''));
  const pool = preferred.length > 0 ? preferred : live;
  if (pool.length === 0) return;
  const victim = pool[Math.floor(random() * pool.length)];
  unaborted.delete(stateOf(victim) ?? '');
  harness.abort(victim);
}

describe('chaos under KV pressure', () => {
  const workloads = {
    fcfs: randomWorkload(seededRandom(7), { ...SHAPE, maxPriority: 0 }),
    priority: randomWorkload(seededRandom(8), SHAPE),
  };
  const calm = { fcfs: play(workloads.fcfs), priority: play(workloads.priority) };

  it.each(['fcfs', 'priority'] as const)(
    'the unpressured %s run ends every request as the fake model dictates',
    (name) => {
      let numChecked = 0;
      for (const request of workloads[name]) {
        const seed = request.sampling?.seed ?? null;
        if (seed === null) continue;
        const expected = referenceOutput(request.prompt, seed, {
          maxTokens: request.sampling!.maxTokens!,
          minTokens: request.sampling!.minTokens ?? 0,
          maxModelLen: MAX_MODEL_LEN,
          stopTokenIds: [FAKE_EOS],
        });
        // Sequence 0 of an n > 1 request keeps the request's seed.
        const seqId = harnessSeqId(request);
        expect(calm[name].outputsOf(seqId)).toEqual(expected.tokens);
        expect(calm[name].ends.get(seqId)).toBe(expected.finishReason);
        numChecked++;
      }
      expect(numChecked).toBeGreaterThan(100);
    },
  );

  it.each(['fcfs', 'priority'] as const)('the unpressured %s run with overlap ends the same way', (name) => {
    const overlapped = play(workloads[name], undefined, true);
    for (const request of workloads[name]) {
      for (const seqId of calm[name].outputSeqIds(request.requestId)) {
        expect(overlapped.outputsOf(seqId)).toEqual(calm[name].outputsOf(seqId));
        expect(overlapped.ends.get(seqId)).toBe(calm[name].ends.get(seqId));
      }
    }
    expect(overlapped.numOverlapped).toBeGreaterThan(0.9 * overlapped.numSteps);
    expect(overlapped.numPlaceholders).toBeGreaterThan(0);
  });

  const cases: (Chaos & { workload: 'fcfs' | 'priority' })[] = [];
  for (const overlap of [false, true]) {
    for (const pressure of [0.7, 0.9, 0.98]) {
      for (const preemptionMode of ['recompute', 'swap'] as const) {
        for (const workload of ['fcfs', 'priority'] as const) {
          cases.push({ pressure, preemptionMode, workload, kv: 'radix', abortRate: 0.08, overlap });
        }
      }
    }
    for (const preemptionMode of ['recompute', 'swap'] as const) {
      const kv = 'naive';
      cases.push({ pressure: 0.9, preemptionMode, workload: 'priority', kv, abortRate: 0.08, overlap });
    }
  }

  it.each(cases)(
    '$workload at $pressure pressure, $preemptionMode preemption, $kv manager, overlap $overlap',
    (chaos) => {
      const workload = workloads[chaos.workload];
      const harness = play(workload, { ...chaos, seed: Math.round(chaos.pressure * 100) });
      const { scheduler, kv } = harness;
      let numAborted = 0;
      for (const request of workload) {
        for (const seqId of harness.outputSeqIds(request.requestId)) {
          const end = harness.ends.get(seqId);
          expect(['stop', 'length', 'abort']).toContain(end);
          const outputs = harness.outputsOf(seqId);
          const expected = calm[chaos.workload].outputsOf(seqId);
          if (end === 'abort') {
            numAborted++;
            expect(expected.slice(0, outputs.length)).toEqual(outputs);
          } else {
            expect(outputs).toEqual(expected);
            expect(end).toBe(calm[chaos.workload].ends.get(seqId));
          }
        }
      }
      expect(numAborted).toBeGreaterThan(0);
      expect([...harness.abortedStates].sort()).toEqual(['decoding', 'preempted', 'prefilling', 'waiting']);
      // The workload filled what the ballast left and was preempted (by swap in swap mode); with FCFS every
      // preemption is for want of KV.
      expect(peakUsage.get(harness)).toBeGreaterThanOrEqual(chaos.pressure + 0.9 * (1 - chaos.pressure));
      expect(scheduler.stats().numPreemptions).toBeGreaterThan(0);
      if (chaos.overlap) {
        // Steps were built while others ran, with placeholders; some of those rows were discarded and some
        // preemptions hit sequences of the step in flight.
        expect(harness.numOverlapped).toBeGreaterThan(0.5 * harness.numSteps);
        expect(harness.numPlaceholders).toBeGreaterThan(0);
        expect(harness.numDiscarded).toBeGreaterThan(0);
        expect(harness.numPreemptedInFlight).toBeGreaterThan(0);
      }
      if (chaos.preemptionMode === 'swap')
        expect(Math.min(harness.numSwapOuts, harness.numSwapIns)).toBeGreaterThan(0);
      expect(scheduler.stats()).toEqual({
        numWaiting: 0,
        numRunning: 0,
        numSwapped: 0,
        numPreemptions: expect.any(Number),
      });
      kv.checkIntegrity();
      const stats = kv.stats();
      expect(stats.numUsedSlots).toBe(0);
      expect(stats.numFreeSlots + stats.numCachedSlots).toBe(stats.numSlots);
      expect(stats.numFreeHostSlots).toBe(stats.numHostSlots);
    },
  );
});

function harnessSeqId(request: TimedRequest): string {
  return request.sampling?.n === 1 ? request.requestId : `${request.requestId}#0`;
}
