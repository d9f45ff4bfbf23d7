// What the sampling kernel (sampling.cu) and its helpers (sampling-top.cuh, sampling-truncation.cuh) share: the
// block size, order-preserving keys of floats, and block-wide reductions.
#pragma once

#include <cmath>
#include <cstdint>

namespace ferrum {
namespace sampling {

/** Threads of a sampling block: 32 warps, so a reduction's second round gives every lane one warp's value. */
constexpr int kThreads = 1024;

/** Monotone map of floats to uint32 (-inf is the smallest finite-or-infinite key). */
__device__ __forceinline__ uint32_t orderedKey(float v) {
  const uint32_t bits = __float_as_uint(v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

/** orderedKey of a finite logit, 0 for -inf (and NaN): the key of any token a list may hold. */
struct FiniteKey {
  __device__ uint32_t operator()(float l) const { return l > -INFINITY ? orderedKey(l) : 0u; }
};

/** The float whose orderedKey is `key`. */
__device__ __forceinline__ float keyValue(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

/** `op` over the block's values, returned to every thread; `scratch` holds 32 entries. */
template <typename T, typename Op>
__device__ T blockReduce(T v, Op op, T* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[lane];  // kThreads / 32 == 32 warps, so every lane has an entry
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

/** The block's exclusive prefix sum of `v` in thread order; `*total` gets the whole sum. `scratch`: 32 entries. */
template <typename T>
__device__ __forceinline__ T blockExclusiveSum(T v, T* scratch, T* total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  T inclusive = v;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T below = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += below;
  }
  __syncthreads();
  if (lane == 31) scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T warps = scratch[lane];
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const T below = __shfl_up_sync(0xffffffffu, warps, offset);
      if (lane >= offset) warps += below;
    }
    scratch[lane] = warps;
  }
  __syncthreads();
  *total = scratch[31];
  return inclusive - v + (warp > 0 ? scratch[warp - 1] : T(0));
}

}  // namespace sampling
}  // namespace ferrum
