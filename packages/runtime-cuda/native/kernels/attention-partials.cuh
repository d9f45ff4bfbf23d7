// Where split attention keeps its partial results (decode: AttentionArgs; prefill: PrefillAttentionArgs), one
// layout for both: O at [row][head][split][headDim], then the (m, l) pairs at [row][head][split] after all of O,
// so that every O row starts 32-byte aligned (headDim a multiple of 8) and a warp's stores and loads of it fill
// whole memory sectors. `Args` names the partials buffer (`partial`) and numRows, numHeads, numSplits, headDim.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace ferrum {

/** Index of the partial of (row, head, split): O at a.partial + index · headDim, (m, l) at partialMl(a)[index]. */
template <typename Args>
__device__ __forceinline__ size_t partialIndex(const Args& a, int row, int head, int split) {
  return (static_cast<size_t>(row) * a.numHeads + head) * a.numSplits + split;
}

/** The (m, l) pairs, after all of O. */
template <typename Args>
__device__ __forceinline__ float2* partialMl(const Args& a) {
  return reinterpret_cast<float2*>(a.partial + static_cast<size_t>(a.numRows) * a.numHeads * a.numSplits * a.headDim);
}

}  // namespace ferrum
