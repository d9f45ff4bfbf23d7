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
  /** [threads][scratchFloatsPerThread]: room for (numHeads / numKvHeads) × numSlots scores. */
  float* scratch;
  size_t scratchFloatsPerThread;
};

/**
 * For new token i (of qLen) of a sequence whose KV list has kvLen entries, attends to list entries
 * 0 .. kvLen - qLen + i (bottom-right aligned causal mask; with validated positions this is 0 .. position).
 * Work items are (token, KV head) pairs so that the query heads of a GQA group read each K/V row once, or
 * (token, query head) pairs when there are fewer of those than threads.
 */
void attention(ThreadPool& pool, const KernelTable& kernels, const AttentionArgs& args);

}  // namespace ferrum
