/**
 * Cost of building one 256-sequence decode step: `schedule()` (slot allocation for 256 decodes and the
 * ForwardBatch written into preallocated buffers, kvIndices included) and `complete()` (256 appends and
 * prefix-cache commits). Without overlap both sit between two forwards; with async scheduling only
 * `complete()` of the step in flight does (it also fills the 256 placeholders of the step built while it
 * ran). Run: `pnpm --filter @ferrum/scheduler bench`.
 */
import type { ScheduledStep, Scheduler } from '@ferrum/interfaces';
import { createKvCacheManager } from '@ferrum/kv';
import { resolveSamplingParams } from '@ferrum/types';
import { Bench } from 'tinybench';
import { createScheduler } from '../src/index.js';

const NUM_SEQS = 256;
const CONTEXT = 1024;
/** Room for every timed and untimed step of a run: a sequence that reaches it ends, and the bench fails. */
const MAX_MODEL_LEN = 32_768;

/** A scheduler whose 256 sequences have prefilled `CONTEXT` distinct prompt tokens and now only decode. */
function decodingScheduler(preemptionMode: 'recompute' | 'swap'): Scheduler {
  const kv = createKvCacheManager({ numSlots: NUM_SEQS * MAX_MODEL_LEN, enablePrefixCaching: true });
  const scheduler = createScheduler(
    { maxNumSeqs: NUM_SEQS, maxNumBatchedTokens: 2048, maxModelLen: MAX_MODEL_LEN, preemptionMode },
    kv,
  );
  const sampling = resolveSamplingParams({ maxTokens: MAX_MODEL_LEN - CONTEXT, ignoreEos: true });
  for (let i = 0; i < NUM_SEQS; i++) {
    const prompt = Int32Array.from({ length: CONTEXT }, (_, p) => (i * CONTEXT + p) % 150_000);
    scheduler.add({
      requestId: `r${i}`,
      promptTokenIds: prompt,
      sampling,
      priority: 0,
      arrivalTimeMs: i,
      eosTokenIds: [],
    });
  }
  for (let prefilling = true; prefilling; ) {
    const step = scheduler.schedule()!;
    prefilling = step.batch.numTokens > NUM_SEQS;
    complete(scheduler, step);
  }
  return scheduler;
}

const tokens = new Int32Array(NUM_SEQS).fill(7);
function complete(scheduler: Scheduler, step: ScheduledStep): void {
  scheduler.complete(step, tokens.subarray(0, step.batch.sampleRows.length));
}

const bench = new Bench({ time: 1000, iterations: 200 });
let scheduler!: Scheduler;
let pending: ScheduledStep | null = null;

bench.add(
  `schedule(): ${NUM_SEQS} decodes, context ${CONTEXT}+`,
  () => {
    pending = scheduler.schedule();
  },
  {
    beforeAll: () => {
      scheduler = decodingScheduler('recompute');
    },
    // Untimed: the step must be completed before the next schedule().
    afterEach: () => complete(scheduler, pending!),
  },
);
for (const mode of ['recompute', 'swap'] as const) {
  bench.add(
    `schedule() + complete(): ${NUM_SEQS} decodes, context ${CONTEXT}+, ${mode} mode`,
    () => {
      complete(scheduler, scheduler.schedule()!);
    },
    {
      beforeAll: () => {
        scheduler = decodingScheduler(mode);
      },
    },
  );
}

let inFlight: ScheduledStep | null = null;
bench.add(
  `overlap: complete() of the step in flight, filling the next one's ${NUM_SEQS} placeholders`,
  () => {
    complete(scheduler, inFlight!);
  },
  {
    beforeAll: () => {
      scheduler = decodingScheduler('recompute');
      inFlight = scheduler.schedule();
      pending = scheduler.schedule();
    },
    // Untimed: the next step launches and the one after it is built while it runs.
    afterEach: () => {
      inFlight = pending;
      pending = scheduler.schedule();
    },
  },
);

await bench.run();
console.table(bench.table());
const { batch } = pending!;
console.log(`last step: ${batch.numSeqs} sequences, ${batch.kvIndices.length} kvIndices`);
