// What the two prefill attention kernels share (attention-prefill.cu on mma.sync, attention-prefill-wgmma.cu on
// Hopper's wgmma): a tile's rows and kv range, the online softmax on accumulator fragments, P as a bf16 hi + lo
// pair, and the tile's output (final rows, or a split's unnormalized partial for prefillCombineKernel).
// Fragments are those of mma.sync m16n8k16 and of each warp's 16 rows of a wgmma m64: thread (g = lane / 4,
// c = lane % 4) holds rows g and g + 8 of its warp's 16, columns 2c and 2c + 1 of every 8-wide n-tile.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "attention-partials.cuh"
#include "attention-prefill.h"

namespace ferrum {
namespace prefill {

constexpr int kRows = kPrefillTileRows;  // query rows per tile (16 per warp)
constexpr int kKeys = kPrefillKvStep;  // kv entries per step
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kRows == kWarps * 16, "a warp owns 16 rows of a tile");

/** The block's tile and kv split (blockIdx.z): rows, the kv list, and the range it walks. */
struct TileWork {
  int firstRow, numRows, kvLenFirst;
  int begin, end;      // this split's kv range: whole steps of kKeys; empty splits still write their partial
  const int* slots;    // the tile's kv list
};

__device__ __forceinline__ TileWork tileWork(const PrefillAttentionArgs& a, int tileIndex) {
  const int* tile = a.tiles + 4 * tileIndex;
  TileWork w;
  w.firstRow = tile[0];
  w.numRows = tile[1];
  w.kvLenFirst = tile[3];
  w.slots = a.kvIndices + tile[2];
  const int kvEnd = w.kvLenFirst + w.numRows - 1;  // entries the tile's last row sees
  const int splitLen = prefillStepsPerSplit(kvEnd, a.numSplits) * kKeys;
  w.begin = blockIdx.z * splitLen;
  w.end = min(kvEnd, w.begin + splitLen);
  return w;
}

/** Running max (log2 units) and sum of the thread's two rows. */
struct RowStats {
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  /** 1 / l of each row, the output's normalization; 0 for a row that attended to nothing. */
  __device__ __forceinline__ float2 inverses() const {
    return make_float2(l0 > 0.f ? 1.f / l0 : 0.f, l1 > 0.f ? 1.f / l1 : 0.f);
  }
};

/**
 * One step's online softmax: masks keys past each row's limit (causality and the tile's end) when `mayMask`,
 * turns the scores p (unscaled) into probabilities, and rescales O and the row stats. Scores stay unscaled until
 * the exponent: the scale is positive, so the max commutes with it.
 */
template <int kDimTiles>
__device__ __forceinline__ void softmaxStep(float (&p)[kKeys / 8][4], float (&o)[kDimTiles][4], RowStats& st,
                                            int base, int limit0, int limit1, bool mayMask, float scaleLog2) {
  const int c = threadIdx.x & 3;
  if (mayMask) {
#pragma unroll
    for (int n = 0; n < kKeys / 8; n++) {
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const int key = base + n * 8 + 2 * c + e;
        if (key >= limit0) p[n][e] = -INFINITY;
        if (key >= limit1) p[n][2 + e] = -INFINITY;
      }
    }
  }
  float tileMax0 = -INFINITY, tileMax1 = -INFINITY;
#pragma unroll
  for (int n = 0; n < kKeys / 8; n++) {
    tileMax0 = fmaxf(tileMax0, fmaxf(p[n][0], p[n][1]));
    tileMax1 = fmaxf(tileMax1, fmaxf(p[n][2], p[n][3]));
  }
  tileMax0 *= scaleLog2;
  tileMax1 *= scaleLog2;
#pragma unroll
  for (int offset = 1; offset < 4; offset <<= 1) {
    tileMax0 = fmaxf(tileMax0, __shfl_xor_sync(0xffffffffu, tileMax0, offset));
    tileMax1 = fmaxf(tileMax1, __shfl_xor_sync(0xffffffffu, tileMax1, offset));
  }
  const float new0 = fmaxf(st.m0, tileMax0), new1 = fmaxf(st.m1, tileMax1);
  // A row with nothing visible yet keeps exponent base 0 so exp2(-inf - 0) = 0 rather than NaN.
  const float base0 = new0 == -INFINITY ? 0.f : new0, base1 = new1 == -INFINITY ? 0.f : new1;
  const float alpha0 = exp2f(st.m0 - base0), alpha1 = exp2f(st.m1 - base1);
  float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
  for (int n = 0; n < kKeys / 8; n++) {
    p[n][0] = exp2f(fmaf(p[n][0], scaleLog2, -base0));
    p[n][1] = exp2f(fmaf(p[n][1], scaleLog2, -base0));
    p[n][2] = exp2f(fmaf(p[n][2], scaleLog2, -base1));
    p[n][3] = exp2f(fmaf(p[n][3], scaleLog2, -base1));
    sum0 += p[n][0] + p[n][1];
    sum1 += p[n][2] + p[n][3];
  }
#pragma unroll
  for (int offset = 1; offset < 4; offset <<= 1) {
    sum0 += __shfl_xor_sync(0xffffffffu, sum0, offset);
    sum1 += __shfl_xor_sync(0xffffffffu, sum1, offset);
  }
  st.l0 = st.l0 * alpha0 + sum0;
  st.l1 = st.l1 * alpha1 + sum1;
  st.m0 = new0;
  st.m1 = new1;
#pragma unroll
  for (int t = 0; t < kDimTiles; t++) {
    o[t][0] *= alpha0;
    o[t][1] *= alpha0;
    o[t][2] *= alpha1;
    o[t][3] *= alpha1;
  }
}

// Two floats as a bf16 pair (first in the low half), and the pair of their rounding remainders.
__device__ __forceinline__ void splitBf16(float x, float y, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
  const float2 back = __bfloat1622float2(h);
  const __nv_bfloat162 l = __floats2bfloat162_rn(x - back.x, y - back.y);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = *reinterpret_cast<const uint32_t*>(&l);
}

/**
 * P's keys 16j .. 16j + 15 (score n-tiles 2j and 2j + 1) as the A operand of O += P·V, in two bf16 terms
 * hi = bf16(P) and lo = bf16(P - hi): the product keeps ~16 bits of P, so prefill agrees with the decode kernel
 * (f32 P) to f32 rounding.
 */
__device__ __forceinline__ void packP(const float (&p)[kKeys / 8][4], int j, uint32_t (&hi)[4], uint32_t (&lo)[4]) {
  splitBf16(p[2 * j][0], p[2 * j][1], hi[0], lo[0]);
  splitBf16(p[2 * j][2], p[2 * j][3], hi[1], lo[1]);
  splitBf16(p[2 * j + 1][0], p[2 * j + 1][1], hi[2], lo[2]);
  splitBf16(p[2 * j + 1][2], p[2 * j + 1][3], hi[3], lo[3]);
}

/**
 * The thread's two rows (row0, row0 + 8 of the tile) of head `head`: normalized into out, or, with several
 * splits, O unnormalized with m (log2 units) and l into the split's partial.
 */
template <int D>
__device__ __forceinline__ void storeRows(const PrefillAttentionArgs& a, const TileWork& w, int head, int row0,
                                          const float (&o)[D / 8][4], const RowStats& st) {
  const int c = threadIdx.x & 3;
  if (a.numSplits > 1) {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      const int r = row0 + 8 * half;
      if (r >= w.numRows) continue;
      const size_t at = partialIndex(a, w.firstRow + r, head, blockIdx.z);
      float* part = a.partial + at * D;
#pragma unroll
      for (int t = 0; t < D / 8; t++) {
        *reinterpret_cast<float2*>(part + t * 8 + 2 * c) = make_float2(o[t][2 * half], o[t][2 * half + 1]);
      }
      if (c == 0) partialMl(a)[at] = half == 0 ? make_float2(st.m0, st.l0) : make_float2(st.m1, st.l1);
    }
    return;
  }
  const float2 inv = st.inverses();
  const float inv0 = inv.x, inv1 = inv.y;
  const size_t outStride = static_cast<size_t>(a.numHeads) * D;
#pragma unroll
  for (int t = 0; t < D / 8; t++) {
    const int d = head * D + t * 8 + 2 * c;
    if (row0 < w.numRows) {
      *reinterpret_cast<__nv_bfloat162*>(a.out + (w.firstRow + row0) * outStride + d) =
          __floats2bfloat162_rn(o[t][0] * inv0, o[t][1] * inv0);
    }
    if (row0 + 8 < w.numRows) {
      *reinterpret_cast<__nv_bfloat162*>(a.out + (w.firstRow + row0 + 8) * outStride + d) =
          __floats2bfloat162_rn(o[t][2] * inv1, o[t][3] * inv1);
    }
  }
}

}  // namespace prefill
}  // namespace ferrum
