// Tensor-core prefill attention (attention-prefill.cu): the rows of sequences with several new tokens, in
// tiles of up to 64 consecutive rows of one sequence. Decode rows go to launchAttention (kernels.h).
#pragma once

#include <algorithm>
#include <cstddef>

#include "kernels.h"

namespace ferrum {

/** Query rows per prefill tile. */
constexpr int kPrefillTileRows = 64;
/** Kv entries a prefill block walks per step; a tile's kv splits are whole steps. */
constexpr int kPrefillKvStep = 64;
/** Steps of kPrefillKvStep entries each of `splits` equal kv splits of a `kvLen`-entry list takes. */
__host__ __device__ inline int prefillStepsPerSplit(int kvLen, int splits) {
  const int steps = (kvLen + kPrefillKvStep - 1) / kPrefillKvStep;
  return (steps + splits - 1) / splits;
}
/** Kv splits a prefill tile is cut into at most: the combine kernel gives each split one lane and one load. */
constexpr int kPrefillMaxSplits = 16;
/** Kv splits the producer kernel merges in a thread-block cluster at most (the portable cluster size). */
constexpr int kPrefillMaxClusterSplits = 8;

struct PrefillAttentionArgs {
  const bf16* q;            // row t, head h at q + t * qRowStride + h * headDim (unscaled)
  int qRowStride;
  const bf16* kCache;       // this layer's pools, [slots][numKvHeads * headDim]
  const bf16* vCache;
  const int* kvIndices;     // the batch's kvIndices
  const int* tiles;         // [numTiles][4]: first row, rows (≤ kPrefillTileRows), kv list start, kv entries
                            // the first row sees; row i of the tile sees that many + i
  int numTiles;
  bf16* out;                // [T][numHeads * headDim]
  float* partial;           // when numSplits > 1 and no cluster merges them: O at [T][numHeads][numSplits][headDim],
                            // then (m, l) float pairs at [T][numHeads][numSplits] (attention-partials.cuh)
  int numRows;              // T: the step's rows, which the partials are indexed by
  int numHeads, numKvHeads, headDim;
  int numSplits;            // kv ranges per tile (each tile's list cut into equal whole steps of 64)
  int maxKvLen;             // the longest tile's kv entries (its last row's), for the kernels' choice of splits
  float scale;
  bool wgmma;               // the Hopper kernel (prefillWgmmaAvailable) for head dims it supports
  bool clusterSplits;       // the producer kernel may merge the splits in a cluster (prefillClusterSplitsAvailable)
  int numSms;               // multiprocessors of the device (the Hopper kernels are chosen by the grid against it)
};

/**
 * Kv splits per prefill tile: 1 unless the tiles × heads leave most of the `numSms` multiprocessors idle and
 * the longest kv list is long; bounded by the partials workspace (`partialRowSplits` rows × splits). Splits are
 * whole steps of kPrefillKvStep, so the count is the fewest that give each split as many steps as the bound does:
 * 33 steps in 8 splits take 5 steps a split, and 7 splits do too, with no empty eighth.
 */
inline int choosePrefillSplits(int numTiles, int numHeads, int maxKvLen, int numTokens, int numSms,
                               size_t partialRowSplits) {
  constexpr int kMinKvPerSplit = 256;
  const int blocks = numTiles * numHeads;
  if (blocks >= numSms || maxKvLen < 2 * kMinKvPerSplit || numTokens == 0) return 1;
  int splits = std::min((2 * numSms + blocks - 1) / blocks, maxKvLen / kMinKvPerSplit);
  splits = std::min<int>(splits, static_cast<int>(partialRowSplits / static_cast<size_t>(numTokens)));
  splits = std::max(1, std::min(splits, kPrefillMaxSplits));
  const int stepsEach = prefillStepsPerSplit(maxKvLen, splits);
  return (prefillStepsPerSplit(maxKvLen, 1) + stepsEach - 1) / stepsEach;
}

/** Head dims the prefill kernel is instantiated for; others run every row through launchAttention. */
bool prefillAttentionSupportsHeadDim(int headDim);
/** Returns whether the attention kernel merged the kv splits itself (launchPrefillAttentionProducer's clusters). */
bool launchPrefillAttention(const PrefillAttentionArgs& args, cudaStream_t stream);
/**
 * Loads the kernels launchPrefillAttention may run for `args`' head dim, heads and `wgmma` (the split combine
 * included). CUDA loads a kernel at its first launch by default, and that launch held up a step of the H100's
 * Qwen3-4B shape by ~0.5 ms of GPU time (the first chunk over a cached prefix, the combine kernel's first use).
 */
void preloadPrefillAttention(const PrefillAttentionArgs& args);

/**
 * Whether `device` runs the wgmma prefill kernel (attention-prefill-wgmma.cu): compute capability 9.x, this
 * build's architectures include sm_90a, and FERRUM_CUDA_WGMMA is not "0" (which keeps the mma.sync kernel, to
 * compare the two or to rule the new one out).
 */
bool prefillWgmmaAvailable(int device);
bool prefillWgmmaSupportsHeadDim(int headDim);
/** Query heads a wgmma prefill block serves (one warpgroup each): 2 where the group (heads a kv head) is even. */
int prefillWgmmaHeadsPerBlock(const PrefillAttentionArgs& args);
/**
 * Whether the producer kernel may merge a tile's kv splits itself, in a thread-block cluster: where
 * prefillWgmmaAvailable holds and FERRUM_CUDA_CLUSTER_SPLITS is not "0" (which keeps prefillCombineKernel).
 */
bool prefillClusterSplitsAvailable(int device);
/**
 * The attention kernel of launchPrefillAttention on wgmma; headDim 64 or 128. Grids of up to two blocks a
 * multiprocessor go to launchPrefillAttentionProducer. Returns whether the kernel merged the kv splits itself;
 * otherwise (several splits) the caller launches prefillCombineKernel.
 */
bool launchPrefillAttentionWgmma(const PrefillAttentionArgs& args, cudaStream_t stream);
void preloadPrefillAttentionWgmma(const PrefillAttentionArgs& args);
/**
 * The warp-specialized wgmma kernel (attention-prefill-producer.cu), one block a multiprocessor. Returns whether it
 * merged the kv splits in clusters (`clusterSplits`): each tile's splits one cluster, every cluster of the grid
 * resident at once (one wave, as without clusters). It may take fewer splits than numSplits for that (up to
 * kPrefillMaxClusterSplits, and at most one more step a split).
 */
bool launchPrefillAttentionProducer(const PrefillAttentionArgs& args, cudaStream_t stream);
void preloadPrefillAttentionProducer(const PrefillAttentionArgs& args);

}  // namespace ferrum
