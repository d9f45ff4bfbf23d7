// One attention head's bias, RMSNorm (Qwen3's q/k norm) and RoPE (Hugging Face's rotate_half layout: element d
// pairs with d ± headDim/2), held by one warp: lane l < 2P holds the E consecutive elements from l · E
// (headDim = 2 · P · E, P <= 16 lanes a half), so the rotation partner of lane l's elements is lane l ± P, one
// shuffle away. Shared by qkvRopeKernel and the decode attention kernel's fused path, so both round alike.
#pragma once

#include "bf16-vec.cuh"
#include "device-math.cuh"

namespace ferrum {

/** Elements a lane holds for a head dim: the fewest E of 1, 2, 4, 8 with headDim = 2 · P · E and P <= 16; 0: none. */
__host__ __device__ constexpr int ropeLaneElements(int headDim) {
  for (int e = 1; e <= 8; e *= 2) {
    if (headDim % (2 * e) == 0 && headDim / (2 * e) <= 16) return e;
  }
  return 0;
}

/**
 * cos and sin of each of the headDim / 2 angles of `position` into the block's shared tables. Every thread of the
 * block calls it, and the tables are complete for all of them when it returns: the warps that read an entry are
 * not the ones that wrote it (decode graphs once gave run-to-run different logits for want of this barrier).
 */
__device__ __forceinline__ void ropeTable(int position, const float* invFreq, int headDim, float* cosS, float* sinS) {
  const float p = static_cast<float>(position);
  for (int i = threadIdx.x; i < headDim / 2; i += blockDim.x) sincosf(p * invFreq[i], &sinS[i], &cosS[i]);
  __syncthreads();
}

// E elements a lane, moved W at a time (W = E when every pointer allows it, else 1).
template <int E, int W>
__device__ __forceinline__ void loadHead(const __nv_bfloat16* p, float (&f)[E]) {
#pragma unroll
  for (int i = 0; i < E; i += W) loadBf16<W>(p + i, reinterpret_cast<float(&)[W]>(f[i]));
}

template <int E, int W>
__device__ __forceinline__ void storeHead(__nv_bfloat16* p, const float (&f)[E]) {
#pragma unroll
  for (int i = 0; i < E; i += W) storeBf16<W>(p + i, reinterpret_cast<const float(&)[W]>(f[i]));
}

/** Where a lane's elements sit in its head (see the top of this file). */
struct RopeLane {
  int lane, P;
  bool active;  // lanes past 2P hold zeros
  int d0;       // first element (idle lanes: 0)
  int freq0;    // angle index of d0 (d0 mod headDim / 2)
  template <int E>
  __device__ __forceinline__ static RopeLane of(int lane, int headDim) {
    RopeLane r;
    r.lane = lane;
    r.P = headDim / (2 * E);
    r.active = lane < 2 * r.P;
    r.d0 = (r.active ? lane : 0) * E;
    r.freq0 = (r.active ? lane % r.P : 0) * E;
    return r;
  }
};

/** A lane's cos and sin (E angles from r.freq0) out of the block's shared tables (ropeTable), kept in registers. */
template <int E>
__device__ __forceinline__ void laneAngles(const RopeLane& r, const float* cosS, const float* sinS, float (&cosv)[E],
                                           float (&sinv)[E]) {
#pragma unroll
  for (int e = 0; e < E; e++) {
    cosv[e] = cosS[r.freq0 + e];
    sinv[e] = sinS[r.freq0 + e];
  }
}

/**
 * x (a lane's elements of one head) += bias (rounded to bf16, if `hasBias`), then RMSNorm with `norm` (if
 * `hasNorm`), then the rotation (if `rotate`) by the lane's angles (laneAngles). Warp-collective: every lane of
 * the warp calls it. (Arrays by reference with flags, not pointers, keep them in registers.)
 */
template <int E>
__device__ __forceinline__ void transformHead(float (&x)[E], const float (&bias)[E], bool hasBias,
                                              const float (&norm)[E], bool hasNorm, bool rotate, const RopeLane& r,
                                              const float (&cosv)[E], const float (&sinv)[E], float eps,
                                              int headDim) {
#pragma unroll
  for (int e = 0; e < E; e++) {
    if (hasBias) x[e] = roundBf16(x[e] + bias[e]);
    if (!r.active) x[e] = 0.f;
  }
  if (hasNorm) {
    float sumSquares = 0.f;
#pragma unroll
    for (int e = 0; e < E; e++) sumSquares += x[e] * x[e];
    const float inv = rsqrtf(warpSum(sumSquares) / headDim + eps);
#pragma unroll
    for (int e = 0; e < E; e++) x[e] = roundBf16(norm[e] * roundBf16(x[e] * inv));
  }
  if (rotate) {
    const int partner = !r.active ? r.lane : (r.lane < r.P ? r.lane + r.P : r.lane - r.P);
    float other[E];
#pragma unroll
    for (int e = 0; e < E; e++) other[e] = __shfl_sync(0xffffffffu, x[e], partner);
#pragma unroll
    for (int e = 0; e < E; e++) {
      const float rotated = r.lane < r.P ? -other[e] : other[e];
      // One rounding order at every call site (no contraction left to the compiler), so the eager kernel and
      // decode attention's fused path write the same K bits for a token.
      x[e] = __fmaf_rn(x[e], cosv[e], __fmul_rn(rotated, sinv[e]));
    }
  }
}

}  // namespace ferrum
