// Causal attention of a batch's new tokens over the KV token pool, addressed FlashInfer-style by
// kvIndptr/kvIndices with page size 1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "forward-batch.h"
#include "kernels.h"
#include "kv-pool.h"
#include "thread-pool.h"

namespace ferrum {

struct AttentionArgs {
  const BatchView* batch;
  /** Sequence of each new token (token t belongs to sequence tokenSeq[t]). */
  const int32_t* tokenSeq;
  /** [numTokens][numHeads * headDim], RoPE applied. */
  const float* q;
  /** [numTokens][numHeads * headDim]. */
  float* out;
  KvPool* kv;
  int layer;
  int numHeads;
  int numKvHeads;
  int headDim;
  /** [threads][scratchFloatsPerThread], each attentionScratchFloats(group, numSlots, headDim) or more. */
  float* scratch;
  size_t scratchFloatsPerThread;
  /** Room for numTokens ints: the first token of each query block, filled by attention(). */
  int32_t* blockStarts;
};

/** Tokens of one sequence that attend together, reading each K/V row once (a query block). */
constexpr int kQueryBlock = 16;

/**
 * Scratch floats a thread needs: one token's scores over all numSlots entries, or a whole block's over sequences of up
 * to ~8,192 entries (longer ones attend in smaller blocks), and a block's q and output rows.
 */
size_t attentionScratchFloats(int group, int numSlots, int headDim);

/**
 * For new token i (of qLen) of a sequence whose KV list has kvLen entries, attends to list entries
 * 0 .. kvLen - qLen + i (bottom-right aligned causal mask; with validated positions this is 0 .. position).
 * Work items are (query block, KV head) pairs: up to kQueryBlock consecutive tokens of a sequence (fewer where the
 * sequence is long) and the query heads of a GQA group, so that each K/V row is read once per block.
 * Single tokens (decode) with fewer such items than threads take (token, query head) items instead. A token's result
 * does not depend on its block: each score, softmax and weighted sum is its own, over its own keys, in key order.
 */
void attention(ThreadPool& pool, const KernelTable& kernels, const AttentionArgs& args);

}  // namespace ferrum
