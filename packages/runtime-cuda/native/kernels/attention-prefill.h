// Tensor-core prefill attention (attention-prefill.cu): the rows of sequences with several new tokens, in
// tiles of up to 64 consecutive rows of one sequence. Decode rows go to launchAttention (kernels.h).
#pragma once

#include <algorithm>
#include <cstddef>

#include "kernels.h"

namespace ferrum {

/** Query rows per prefill tile. */
constexpr int kPrefillTileRows = 64;
/** Kv splits a prefill tile is cut into at most: the combine kernel gives each split one lane and one load. */
constexpr int kPrefillMaxSplits = 16;

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
  float* partial;           // when numSplits > 1: O at [T][numHeads][numSplits][headDim], then (m, l) float pairs at
                            // [T][numHeads][numSplits] (attention-partials.cuh)
  int numRows;              // T: the step's rows, which the partials are indexed by
  int numHeads, numKvHeads, headDim;
  int numSplits;            // kv ranges per tile (each tile's list cut into equal whole steps of 64)
  float scale;
  bool wgmma;               // the Hopper kernel (prefillWgmmaAvailable) for head dims it supports
  int numSms;               // multiprocessors of the device (the Hopper kernels are chosen by the grid against it)
};

/**
 * Kv splits per prefill tile: 1 unless the tiles × heads leave most of the `numSms` multiprocessors idle and
 * the longest kv list is long; bounded by the partials workspace (`partialRowSplits` rows × splits).
 */
inline int choosePrefillSplits(int numTiles, int numHeads, int maxKvLen, int numTokens, int numSms,
                               size_t partialRowSplits) {
  constexpr int kMinKvPerSplit = 256;
  const int blocks = numTiles * numHeads;
  if (blocks >= numSms || maxKvLen < 2 * kMinKvPerSplit || numTokens == 0) return 1;
  int splits = std::min((2 * numSms + blocks - 1) / blocks, maxKvLen / kMinKvPerSplit);
  splits = std::min<int>(splits, static_cast<int>(partialRowSplits / static_cast<size_t>(numTokens)));
  return std::max(1, std::min(splits, kPrefillMaxSplits));
}

/** Head dims the prefill kernel is instantiated for; others run every row through launchAttention. */
bool prefillAttentionSupportsHeadDim(int headDim);
void launchPrefillAttention(const PrefillAttentionArgs& args, cudaStream_t stream);
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
 * The attention kernel of launchPrefillAttention on wgmma, without the split combine; headDim 64 or 128. Grids of up
 * to two blocks a multiprocessor go to launchPrefillAttentionProducer.
 */
void launchPrefillAttentionWgmma(const PrefillAttentionArgs& args, cudaStream_t stream);
void preloadPrefillAttentionWgmma(const PrefillAttentionArgs& args);
/** The warp-specialized wgmma kernel (attention-prefill-producer.cu), one block a multiprocessor. */
void launchPrefillAttentionProducer(const PrefillAttentionArgs& args, cudaStream_t stream);
void preloadPrefillAttentionProducer(const PrefillAttentionArgs& args);

}  // namespace ferrum
