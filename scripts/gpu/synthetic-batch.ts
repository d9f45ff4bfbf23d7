// Synthetic forward batches for GPU benchmarks and profiles: `seqs` sequences, each with `newTokens` new
// tokens at the end of `context` tokens, sequence s owning slots s × 1024 + j, greedy device sampling of
// each sequence's last row.
import type { ModelConfig } from '../../packages/models/src/index.js';
import {
  DEFAULT_SAMPLING_PARAMS,
  type ForwardBatch,
  type RowSampling,
} from '../../packages/types/src/index.js';

const greedy: RowSampling = {
  requestId: 'bench',
  params: { ...DEFAULT_SAMPLING_PARAMS, temperature: 0 },
  seed: 0,
  outputTokenIds: new Int32Array(0),
  promptTokenIds: new Int32Array(0),
  needsHostLogits: false,
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
  const T = seqs * newTokens;
  const kvIndices = new Int32Array(seqs * context);
  const positions = new Int32Array(T);
  const slotMapping = new Int32Array(T);
  const qIndptr = new Int32Array(seqs + 1);
  const kvIndptr = new Int32Array(seqs + 1);
  const sampleRows = new Int32Array(seqs);
  for (let s = 0; s < seqs; s++) {
    const base = (firstSeq + s) * SLOTS_PER_SEQUENCE;
    for (let j = 0; j < context; j++) kvIndices[s * context + j] = base + j;
    for (let i = 0; i < newTokens; i++) {
      positions[s * newTokens + i] = context - newTokens + i;
      slotMapping[s * newTokens + i] = base + context - newTokens + i;
    }
    qIndptr[s + 1] = (s + 1) * newTokens;
    kvIndptr[s + 1] = (s + 1) * context;
    sampleRows[s] = (s + 1) * newTokens - 1;
  }
  return {
    tokenIds: new Int32Array(T).map((_, i) => (i * 7919 + 13) % config.vocabSize),
    positions,
    qIndptr,
    kvIndptr,
    kvIndices,
    slotMapping,
    sampleRows,
    numSeqs: seqs,
    numTokens: T,
    sampling: Array(seqs).fill(greedy),
  };
}
