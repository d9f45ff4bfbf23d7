#include "attention.h"

#include <cmath>
#include <cstring>

namespace ferrum {
namespace {

// Query heads [firstHead, firstHead + numHeads) of tokens [token, token + tokens) of one sequence, all in the GQA
// group of `kvHead`. One token reads and writes its rows in place; a block gathers its q rows first, so that every
// (token, head) pair is one row of the kernels' scores, and scatters its output rows after.
void attendBlock(const KernelTable& kernels, const AttentionArgs& a, int token, int tokens, int kvHead, int firstHead,
                 int numHeads, float* scratch) {
  const BatchView& batch = *a.batch;
  const int seq = a.tokenSeq[token];
  const int qBegin = batch.qIndptr.data[seq];
  const int qLen = batch.qIndptr.data[seq + 1] - qBegin;
  const int kvBegin = batch.kvIndptr.data[seq];
  const int kvLen = batch.kvIndptr.data[seq + 1] - kvBegin;
  // Keys of the block's last token; token i of the block sees tokens - 1 - i fewer.
  const int count = kvLen - qLen + (token + tokens - 1 - qBegin) + 1;
  const int32_t* slots = batch.kvIndices.data + kvBegin;
  const int hd = a.headDim;
  const int rows = tokens * numHeads;
  const size_t rowWidth = static_cast<size_t>(a.numHeads) * hd;
  const size_t headOffset = static_cast<size_t>(firstHead) * hd;
  const size_t tokenFloats = static_cast<size_t>(numHeads) * hd;  // a token's rows of the group
  const size_t rowBytes = sizeof(float) * tokenFloats;
  float* scores = scratch;
  float* gathered = scores + static_cast<size_t>(rows) * count;
  const float* qRows = a.q + static_cast<size_t>(token) * rowWidth + headOffset;
  float* outRows = a.out + static_cast<size_t>(token) * rowWidth + headOffset;
  for (int i = 0; tokens > 1 && i < tokens; ++i) {
    std::memcpy(gathered + i * tokenFloats, qRows + i * rowWidth, rowBytes);
  }
  const float* q = tokens > 1 ? gathered : qRows;
  float* out = tokens > 1 ? gathered + tokens * tokenFloats : outRows;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const size_t kvDim = static_cast<size_t>(a.numKvHeads) * hd;
  const KvRows keys{a.kv->key(a.layer, 0) + static_cast<size_t>(kvHead) * hd, kvDim, slots, count, hd};
  kernels.scores(keys, q, rows, scale, scores);
  for (int r = 0; r < rows; ++r) {
    float* row = scores + static_cast<size_t>(r) * count;
    const int own = count - (tokens - 1 - r / numHeads);
    kernels.softmax(row, own);
    // Weight 0 for the block's later tokens: the weighted sum adds exact zeros in their place.
    std::memset(row + own, 0, sizeof(float) * static_cast<size_t>(count - own));
  }
  const KvRows values{a.kv->value(a.layer, 0) + static_cast<size_t>(kvHead) * hd, kvDim, slots, count, hd};
  kernels.weightedValues(values, scores, rows, out);
  for (int i = 0; tokens > 1 && i < tokens; ++i) {
    std::memcpy(outRows + i * rowWidth, out + i * tokenFloats, rowBytes);
  }
}

// Entries past numSlots a thread's scores have room for: whole blocks up to this many keys (plus numSlots / 16), one
// token's scores over a whole pool at least, without scratch of kQueryBlock × the pool a thread.
constexpr size_t kBlockSlots = 8192;

// Scratch floats before a block's scores: 16 of padding (each thread's scratch on its own cache lines), its q and
// output rows.
size_t fixedFloats(int group, int headDim) { return 16 + 2 * static_cast<size_t>(kQueryBlock) * group * headDim; }

}  // namespace

size_t attentionScratchFloats(int group, int numSlots, int headDim) {
  return static_cast<size_t>(group) * (static_cast<size_t>(numSlots) + kQueryBlock * kBlockSlots) +
         fixedFloats(group, headDim);
}

void attention(ThreadPool& pool, const KernelTable& kernels, const AttentionArgs& args) {
  const BatchView& batch = *args.batch;
  const int group = args.numHeads / args.numKvHeads;
  // Each sequence's new tokens in blocks of as many as the scratch holds the scores of (kQueryBlock at most).
  const size_t scoreFloats = args.scratchFloatsPerThread - fixedFloats(group, args.headDim);
  int numBlocks = 0;
  for (int seq = 0; seq < batch.numSeqs; ++seq) {
    const size_t kvLen = static_cast<size_t>(batch.kvIndptr.data[seq + 1] - batch.kvIndptr.data[seq]);
    const size_t fit = scoreFloats / (static_cast<size_t>(group) * (kvLen > 0 ? kvLen : 1));
    const int size = fit < 1 ? 1 : fit < static_cast<size_t>(kQueryBlock) ? static_cast<int>(fit) : kQueryBlock;
    for (int t = batch.qIndptr.data[seq]; t < batch.qIndptr.data[seq + 1]; t += size) args.blockStarts[numBlocks++] = t;
  }
  // Few (token, KV head) items (single-stream decode) leave threads idle: then one item per query head,
  // which reads each K/V row once per head instead of once per group but computes the same numbers.
  const bool perHead =
      numBlocks == batch.numTokens && static_cast<int64_t>(batch.numTokens) * args.numKvHeads < pool.size();
  const int perBlock = perHead ? args.numHeads : args.numKvHeads;
  const int headsPerItem = perHead ? 1 : group;
  pool.forEachDynamic(static_cast<int64_t>(numBlocks) * perBlock, [&](int64_t item, int thread) {
    const int block = static_cast<int>(item / perBlock);
    const int token = args.blockStarts[block];
    const int seq = args.tokenSeq[token];
    const int next = block + 1 < numBlocks ? args.blockStarts[block + 1] : batch.numTokens;
    const int seqEnd = batch.qIndptr.data[seq + 1];
    const int tokens = (next < seqEnd ? next : seqEnd) - token;
    const int firstHead = static_cast<int>(item % perBlock) * headsPerItem;
    attendBlock(kernels, args, token, tokens, firstHead / group, firstHead, headsPerItem,
                args.scratch + static_cast<size_t>(thread) * args.scratchFloatsPerThread);
  });
}

}  // namespace ferrum
