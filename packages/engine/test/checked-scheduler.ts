import type { Scheduler } from '@ferrum/interfaces';

/**
 * Wraps a scheduler and fails loudly when `complete()` reports anything for a sequence that had ended
 * (finished with a reason, finished by the engine, or aborted with its request): with steps launched before
 * the previous one completed, a sequence ending in step N still has a row in step N + 1, which must be ignored.
 */
export function checkedScheduler(inner: Scheduler): Scheduler {
  const endedSeqs = new Set<string>();
  const abortedRequests = new Set<string>();
  return {
    specificationVersion: 'v1',
    supportsAsyncScheduling: inner.supportsAsyncScheduling,
    add: (request) => inner.add(request),
    abort(requestId) {
      abortedRequests.add(requestId);
      return inner.abort(requestId);
    },
    finish(seqId, reason) {
      endedSeqs.add(seqId);
      inner.finish(seqId, reason);
    },
    schedule: () => inner.schedule(),
    complete(step, tokenIds) {
      const updates = inner.complete(step, tokenIds);
      for (const update of updates) {
        if (endedSeqs.has(update.seqId) || abortedRequests.has(update.requestId)) {
          throw new Error(`${update.seqId} got an update after it ended`);
        }
        if (update.finishReason !== undefined) endedSeqs.add(update.seqId);
      }
      return updates;
    },
    stateOf: (seqId) => inner.stateOf(seqId),
    hasWork: () => inner.hasWork(),
    stats: () => inner.stats(),
  };
}
