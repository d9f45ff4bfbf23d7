#include "attention.h"

#include <cmath>

namespace ferrum {
namespace {

// Query heads [firstHead, firstHead + numHeads) of `token`, all in the GQA group of `kvHead`.
void attendOne(const KernelTable& kernels, const AttentionArgs& a, int token, int kvHead, int firstHead, int numHeads,
               float* scores) {
  const BatchView& batch = *a.batch;
  const int seq = a.tokenSeq[token];
  const int qBegin = batch.qIndptr.data[seq];
  const int qLen = batch.qIndptr.data[seq + 1] - qBegin;
  const int kvBegin = batch.kvIndptr.data[seq];
  const int kvLen = batch.kvIndptr.data[seq + 1] - kvBegin;
  const int count = kvLen - qLen + (token - qBegin) + 1;
  const int32_t* slots = batch.kvIndices.data + kvBegin;
  const int group = numHeads;
  const int hd = a.headDim;
  const size_t rowWidth = static_cast<size_t>(a.numHeads) * hd;
  const float* q = a.q + static_cast<size_t>(token) * rowWidth + static_cast<size_t>(firstHead) * hd;
  float* out = a.out + static_cast<size_t>(token) * rowWidth + static_cast<size_t>(firstHead) * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  const size_t kvDim = static_cast<size_t>(a.numKvHeads) * hd;
  const KvRows keys{a.kv->key(a.layer, 0) + static_cast<size_t>(kvHead) * hd, kvDim, slots, count, hd};
  kernels.scores(keys, q, group, scale, scores);
  for (int h = 0; h < group; ++h) kernels.softmax(scores + static_cast<size_t>(h) * count, count);
  const KvRows values{a.kv->value(a.layer, 0) + static_cast<size_t>(kvHead) * hd, kvDim, slots, count, hd};
  kernels.weightedValues(values, scores, group, out);
}

}  // namespace

void attention(ThreadPool& pool, const KernelTable& kernels, const AttentionArgs& args) {
  const int group = args.numHeads / args.numKvHeads;
  // Few (token, KV head) items (single-stream decode) leave threads idle: then one item per query head,
  // which reads each K/V row once per head instead of once per group but computes the same numbers.
  const bool perHead = static_cast<int64_t>(args.batch->numTokens) * args.numKvHeads < pool.size();
  const int perToken = perHead ? args.numHeads : args.numKvHeads;
  const int headsPerItem = perHead ? 1 : group;
  pool.forEachDynamic(static_cast<int64_t>(args.batch->numTokens) * perToken, [&](int64_t item, int thread) {
    float* scores = args.scratch + static_cast<size_t>(thread) * args.scratchFloatsPerThread;
    const int token = static_cast<int>(item / perToken);
    const int firstHead = static_cast<int>(item % perToken) * headsPerItem;
    attendOne(kernels, args, token, firstHead / group, firstHead, headsPerItem, scores);
  });
}

}  // namespace ferrum
