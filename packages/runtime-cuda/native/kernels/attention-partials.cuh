// Where split attention keeps its partial results (decode: AttentionArgs; prefill: PrefillAttentionArgs), one
// layout for both: O at [row][head][split][headDim], then the (m, l) pairs at [row][head][split] after all of O,
// so that every O row starts 32-byte aligned (headDim a multiple of 8) and a warp's stores and loads of it fill
// whole memory sectors. `Args` names the partials buffer (`partial`) and numRows, numHeads, numSplits, headDim.
#pragma once

#include <cuda_bf16.h>
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

/** E consecutive floats (E of 1, 2 or 4, from an address aligned to E floats) into v. */
template <int E>
__device__ __forceinline__ void loadFloats(const float* p, float (&v)[E]) {
  if constexpr (E == 4) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else if constexpr (E == 2) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x, v[1] = x.y;
  } else {
    static_assert(E == 1, "1, 2 or 4 floats");
    v[0] = *p;
  }
}

/** A warp's sum, every addition rounded as written (no contraction), in the same order wherever it runs. */
__device__ __forceinline__ float warpSumRounded(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/**
 * How the splits of one (row, head) merge, by a warp whose lane s holds split s's (m, l) ((-inf, 0) past the
 * splits): out = Σ O_s 2^(m_s - M) / Σ l_s 2^(m_s - M), M the largest m. Returns lane s's weight 2^(m_s - M) (0 for a
 * split that saw nothing) and sets `sum` to the denominator (0 when no split saw anything). Every merge of the same
 * partials (the combine kernel's, a cluster's) runs this and mergeValues, so they give the same bits.
 */
__device__ __forceinline__ float splitWeight(float2 ml, float& sum) {
  float mMax = ml.x;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) mMax = fmaxf(mMax, __shfl_xor_sync(0xffffffffu, mMax, offset));
  const float weight = ml.x == -INFINITY ? 0.f : exp2f(__fsub_rn(ml.x, mMax));
  sum = warpSumRounded(__fmul_rn(weight, ml.y));
  return weight;
}

/** A lane's E merged elements from value[s] (split s's, unnormalized): splitWeight's weights, then the division. */
template <int kMax, int E>
__device__ __forceinline__ void mergeValues(float weight, float sum, const float (&value)[kMax][E], float (&out)[E]) {
#pragma unroll
  for (int e = 0; e < E; e++) out[e] = 0.f;
#pragma unroll
  for (int s = 0; s < kMax; s++) {
    const float w = __shfl_sync(0xffffffffu, weight, s);
    if (w > 0.f) {
#pragma unroll
      for (int e = 0; e < E; e++) out[e] = __fmaf_rn(w, value[s][e], out[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < E; e++) out[e] = sum > 0.f ? __fdiv_rn(out[e], sum) : 0.f;
}

/**
 * A warp's merge of one (row, head) into `to`: lane s holds split s's (m, l) in `ml`, `load(s, v)` fills a lane's E
 * elements of split s's O, and lanes that hold no elements (`holds` false) still take part in the shuffles.
 */
template <int kMax, int E, typename Load>
__device__ __forceinline__ void mergeSplitRow(float2 ml, int numSplits, bool holds, Load load, __nv_bfloat16* to) {
  float values[kMax][E];
#pragma unroll
  for (int s = 0; s < kMax; s++) {
    if (s < numSplits && holds) {
      load(s, values[s]);
    } else {
#pragma unroll
      for (int e = 0; e < E; e++) values[s][e] = 0.f;
    }
  }
  float sum;
  const float weight = splitWeight(ml, sum);
  float out[E];
  mergeValues(weight, sum, values, out);
  if (!holds) return;
#pragma unroll
  for (int e = 0; e < E; e++) to[e] = __float2bfloat16(out[e]);
}

}  // namespace ferrum
