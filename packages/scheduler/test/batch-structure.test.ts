import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FAKE_EOS, referenceOutput } from './support/fake-runtime.js';
import { prompt, setup } from './support/setup.js';

const requestArbitrary = fc.record({
  promptLength: fc.integer({ min: 1, max: 48 }),
  maxTokens: fc.integer({ min: 1, max: 24 }),
  n: fc.integer({ min: 1, max: 3 }),
  priority: fc.integer({ min: 0, max: 2 }),
  arrivalStep: fc.integer({ min: 0, max: 20 }),
  abortStep: fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
  seed: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
});

const workloadArbitrary = fc.record({
  numSlots: fc.integer({ min: 64, max: 400 }),
  numHostSlots: fc.integer({ min: 0, max: 200 }),
  maxNumSeqs: fc.integer({ min: 1, max: 8 }),
  extraTokens: fc.integer({ min: 0, max: 64 }),
  extraKvTokens: fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }),
  chunkedPrefill: fc.boolean(),
  preemptionMode: fc.constantFrom('recompute' as const, 'swap' as const),
  kv: fc.constantFrom('radix' as const, 'naive' as const),
  watermark: fc.constantFrom(0, 0.01, 0.05),
  overlap: fc.boolean(),
  requests: fc.array(requestArbitrary, { minLength: 1, maxLength: 16 }),
});

describe('ForwardBatch structure', () => {
  it('every step of random workloads is a consistent batch, and every request ends as the fake model says', () => {
    fc.assert(
      fc.property(workloadArbitrary, (w) => {
        const maxModelLen = Math.min(w.numSlots, 64);
        const maxNumBatchedTokens = w.chunkedPrefill
          ? w.maxNumSeqs + w.extraTokens
          : Math.max(w.maxNumSeqs + w.extraTokens, maxModelLen);
        const { scheduler, kv, harness } = setup({
          kv: w.kv,
          numSlots: w.numSlots,
          numHostSlots: w.numHostSlots,
          maxNumSeqs: w.maxNumSeqs,
          maxNumBatchedTokens,
          maxModelLen,
          maxNumBatchedKvTokens: w.extraKvTokens === undefined ? undefined : maxModelLen + w.extraKvTokens,
          chunkedPrefill: w.chunkedPrefill,
          preemptionMode: w.preemptionMode,
          watermark: w.watermark,
          overlap: w.overlap,
        });
        const requests = w.requests.map((r, i) => ({
          ...r,
          requestId: `r${i}`,
          tokens: prompt(Math.min(r.promptLength, maxModelLen), i),
          n: Math.min(r.n, w.maxNumSeqs),
        }));
        for (let step = 0; step < 5000; step++) {
          for (const r of requests) {
            if (r.arrivalStep === step) {
              harness.add({
                requestId: r.requestId,
                prompt: r.tokens,
                priority: r.priority,
                sampling: { maxTokens: r.maxTokens, n: r.n, seed: r.seed },
              });
            }
            if (r.abortStep === step) harness.abort(r.requestId);
          }
          if (step > 60 && !harness.busy) break;
          if (harness.busy && harness.step() === null) throw new Error('stuck');
        }
        expect(scheduler.hasWork()).toBe(false);
        for (const r of requests) {
          const expected = referenceOutput(r.tokens, r.seed, {
            maxTokens: r.maxTokens,
            minTokens: 0,
            maxModelLen,
            stopTokenIds: [FAKE_EOS],
          });
          for (const seqId of harness.outputSeqIds(r.requestId)) {
            const end = harness.ends.get(seqId);
            expect(end).toBeDefined();
            // Sequence 0 keeps the request's seed, so the greedy fake model fixes its output.
            if (end !== 'abort' && (r.n === 1 || seqId.endsWith('#0'))) {
              expect(harness.outputsOf(seqId)).toEqual(expected.tokens);
              expect(end).toBe(expected.finishReason);
            }
          }
        }
        kv.checkIntegrity();
        expect(kv.stats().numUsedSlots).toBe(0);
        expect(kv.stats().numFreeHostSlots).toBe(w.numHostSlots);
      }),
      { numRuns: 150 },
    );
  });
});
