// Synthetic forward batches for GPU benchmarks and profiles: `seqs` sequences, each with `newTokens` new
// tokens at the end of `context` tokens, sequence s owning slots s × SLOTS_PER_SEQUENCE + j, greedy device
// sampling of each sequence's last row without logprobs (as a plain greedy request runs).
// batch-builder directly: the testing index also loads the conformance suite, which needs a running vitest.
import { buildBatch, greedyRow, range } from '../../packages/models/src/testing/batch-builder.js';
import type { ForwardBatch, ModelConfig, RowSampling } from '../../packages/types/src/index.js';

const greedy = (): RowSampling => {
  const row = greedyRow();
  return { ...row, params: { ...row.params, logprobs: null } };
};

/** Slots per sequence: `context` must not exceed it. */
export const SLOTS_PER_SEQUENCE = 1024;

export function syntheticBatch(
  config: ModelConfig,
  seqs: number,
  context: number,
  newTokens: number,
  firstSeq = 0,
): ForwardBatch {
  const steps = Array.from({ length: seqs }, (_, s) => ({
    tokens: Array.from({ length: newTokens }, (_, i) => ((s * newTokens + i) * 7919 + 13) % config.vocabSize),
    kvSlots: range((firstSeq + s) * SLOTS_PER_SEQUENCE, context),
    sample: 'last' as const,
  }));
  return buildBatch(steps, greedy);
}
