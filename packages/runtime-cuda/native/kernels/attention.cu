// Paged attention over the token pool, for prefill and decode rows alike (page size 1: kvIndices lists the
// slots of each sequence, cached prefix first). One block per (row, kv head, group chunk, split):
//   - the block serves up to kMaxGroup query heads that share the kv head (GQA), so each K/V row is read
//     once per block;
//   - its 4 warps take interleaved tiles of 32 kv entries; a lane scores one entry against every head, then
//     the warp accumulates P·V with lanes over the head dimension (online softmax, f32);
//   - the warps' partial results merge in shared memory; with several splits (long contexts, few rows)
//     each split writes an unnormalized partial that attentionCombineKernel merges.
// Causality is in rowKvLen: row i of a sequence with n new tokens over a kv list of length L attends to the
// first L - n + i + 1 entries.
#include <cfloat>

#include "../cuda-check.h"
#include "device-math.cuh"
#include "kernels.h"

namespace ferrum {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;
constexpr int kTile = 32 * kWarps;

template <int D>
struct PerLane {
  static constexpr int kDims = D >= 32 ? D / 32 : 1;  // head-dim elements each lane owns in P·V
};

template <int D>
__device__ __forceinline__ void loadLaneDims(const bf16* vRow, int lane, float (&v)[PerLane<D>::kDims]) {
  constexpr int E = PerLane<D>::kDims;
  const int d0 = lane * E;
  if (d0 >= D) return;
  if constexpr (E == 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(vRow + d0);
    const bf16* p = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
    for (int e = 0; e < 8; e++) v[e] = __bfloat162float(p[e]);
  } else if constexpr (E == 4) {
    const uint2 raw = *reinterpret_cast<const uint2*>(vRow + d0);
    const bf16* p = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
    for (int e = 0; e < 4; e++) v[e] = __bfloat162float(p[e]);
  } else {
#pragma unroll
    for (int e = 0; e < E; e++) v[e] = __bfloat162float(vRow[d0 + e]);
  }
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32) attentionKernel(AttentionArgs a) {
  constexpr int E = PerLane<D>::kDims;
  __shared__ float qs[kMaxGroup][D];
  __shared__ float merge[kWarps][kMaxGroup][D + 2];  // per warp: acc[D], m, l

  const int row = blockIdx.x;
  const int split = blockIdx.z;
  const int group = a.numHeads / a.numKvHeads;
  const int groupBlocks = (group + kMaxGroup - 1) / kMaxGroup;
  const int kvHead = blockIdx.y / groupBlocks;
  const int g0 = (blockIdx.y % groupBlocks) * kMaxGroup;
  const int numGroup = min(kMaxGroup, group - g0);
  const int head0 = kvHead * group + g0;
  const int kvDim = a.numKvHeads * D;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;

  const bf16* qRow = a.q + static_cast<size_t>(row) * a.qRowStride + static_cast<size_t>(head0) * D;
  for (int i = threadIdx.x; i < numGroup * D; i += blockDim.x) qs[i / D][i % D] = __bfloat162float(qRow[i]) * a.scale;
  __syncthreads();

  const int kvLen = a.rowKvLen[row];
  // splitSize 0 (decode graphs): the row cuts its own kv range into numSplits tile-aligned chunks.
  const int splitSize = a.splitSize > 0 ? a.splitSize : ((kvLen + a.numSplits - 1) / a.numSplits + kTile - 1) / kTile * kTile;
  const int begin = split * splitSize;
  const int end = min(kvLen, begin + splitSize);
  const int* slots = a.kvIndices + a.rowKvStart[row];
  const size_t headOffset = static_cast<size_t>(kvHead) * D;

  float m[kMaxGroup], l[kMaxGroup], acc[kMaxGroup][E];
#pragma unroll
  for (int g = 0; g < kMaxGroup; g++) {
    m[g] = -INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < E; e++) acc[g][e] = 0.f;
  }

  for (int base = begin + warp * 32; base < end; base += kTile) {
    const int j = base + lane;
    const bool valid = j < end;
    const int slot = valid ? slots[j] : 0;
    float s[kMaxGroup];
#pragma unroll
    for (int g = 0; g < kMaxGroup; g++) s[g] = 0.f;
    if (valid) {
      const bf16* kRow = a.kCache + static_cast<size_t>(slot) * kvDim + headOffset;
#pragma unroll
      for (int c = 0; c < D; c += 8) {
        const uint4 raw = *reinterpret_cast<const uint4*>(kRow + c);
        const bf16* k8 = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
        for (int i = 0; i < 8; i++) {
          const float k = __bfloat162float(k8[i]);
#pragma unroll
          for (int g = 0; g < kMaxGroup; g++) {
            if (g < numGroup) s[g] += k * qs[g][c + i];
          }
        }
      }
    }
    float p[kMaxGroup];
#pragma unroll
    for (int g = 0; g < kMaxGroup; g++) {
      p[g] = 0.f;
      if (g >= numGroup) continue;  // uniform across the block
      const float score = valid ? s[g] : -INFINITY;
      const float mNew = fmaxf(m[g], warpMax(score));
      if (mNew == -INFINITY) continue;  // uniform across the warp: nothing valid seen yet
      const float alpha = __expf(m[g] - mNew);
      p[g] = valid ? __expf(score - mNew) : 0.f;
      l[g] = l[g] * alpha + warpSum(p[g]);
      m[g] = mNew;
#pragma unroll
      for (int e = 0; e < E; e++) acc[g][e] *= alpha;
    }
    const int count = min(32, end - base);
    for (int jj = 0; jj < count; jj++) {
      const int slotJ = __shfl_sync(0xffffffffu, slot, jj);
      float v[E];
#pragma unroll
      for (int e = 0; e < E; e++) v[e] = 0.f;
      loadLaneDims<D>(a.vCache + static_cast<size_t>(slotJ) * kvDim + headOffset, lane, v);
#pragma unroll
      for (int g = 0; g < kMaxGroup; g++) {
        if (g >= numGroup) continue;
        const float pj = __shfl_sync(0xffffffffu, p[g], jj);
#pragma unroll
        for (int e = 0; e < E; e++) acc[g][e] += pj * v[e];
      }
    }
  }

#pragma unroll
  for (int g = 0; g < kMaxGroup; g++) {
    if (g >= numGroup) continue;
    const int d0 = lane * E;
    if (d0 < D) {
#pragma unroll
      for (int e = 0; e < E; e++) merge[warp][g][d0 + e] = acc[g][e];
    }
    if (lane == 0) {
      merge[warp][g][D] = m[g];
      merge[warp][g][D + 1] = l[g];
    }
  }
  __syncthreads();

  for (int i = threadIdx.x; i < numGroup * D; i += blockDim.x) {
    const int g = i / D;
    const int d = i % D;
    float mMax = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; w++) mMax = fmaxf(mMax, merge[w][g][D]);
    float sum = 0.f, out = 0.f;
    if (mMax != -INFINITY) {
#pragma unroll
      for (int w = 0; w < kWarps; w++) {
        const float scale = __expf(merge[w][g][D] - mMax);
        sum += merge[w][g][D + 1] * scale;
        out += merge[w][g][d] * scale;
      }
    }
    const int head = head0 + g;
    if (a.numSplits == 1) {
      a.out[static_cast<size_t>(row) * a.numHeads * D + static_cast<size_t>(head) * D + d] =
          __float2bfloat16(out / sum);
    } else {
      float* part = a.partial + ((static_cast<size_t>(row) * a.numHeads + head) * a.numSplits + split) * (D + 2);
      part[d] = out;
      if (d == 0) {
        part[D] = mMax;
        part[D + 1] = sum;
      }
    }
  }
}

// Merges the splits of one (row, head): out = Σ_s O_s e^{m_s - M} / Σ_s l_s e^{m_s - M}.
__global__ void attentionCombineKernel(AttentionArgs a) {
  const int row = blockIdx.x;
  const int head = blockIdx.y;
  const int D = a.headDim;
  const float* part = a.partial + (static_cast<size_t>(row) * a.numHeads + head) * a.numSplits * (D + 2);
  float mMax = -INFINITY;
  for (int s = 0; s < a.numSplits; s++) mMax = fmaxf(mMax, part[s * (D + 2) + D]);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float sum = 0.f, out = 0.f;
    for (int s = 0; s < a.numSplits; s++) {
      const float* p = part + s * (D + 2);
      if (p[D] == -INFINITY) continue;
      const float scale = __expf(p[D] - mMax);
      sum += p[D + 1] * scale;
      out += p[d] * scale;
    }
    a.out[static_cast<size_t>(row) * a.numHeads * D + static_cast<size_t>(head) * D + d] = __float2bfloat16(out / sum);
  }
}

template <int D>
void launchFor(const AttentionArgs& a, cudaStream_t stream) {
  const int group = a.numHeads / a.numKvHeads;
  const int groupBlocks = (group + kMaxGroup - 1) / kMaxGroup;
  const dim3 grid(a.numRows, a.numKvHeads * groupBlocks, a.numSplits);
  attentionKernel<D><<<grid, kWarps * 32, 0, stream>>>(a);
  FERRUM_LAUNCHED("attentionKernel");
  if (a.numSplits > 1) {
    attentionCombineKernel<<<dim3(a.numRows, a.numHeads), D < 128 ? D : 128, 0, stream>>>(a);
    FERRUM_LAUNCHED("attentionCombineKernel");
  }
}

}  // namespace

bool attentionSupportsHeadDim(int headDim) {
  return headDim == 16 || headDim == 32 || headDim == 64 || headDim == 128 || headDim == 256;
}

void launchAttention(const AttentionArgs& args, cudaStream_t stream) {
  if (args.numRows == 0) return;
  switch (args.headDim) {
    case 16: return launchFor<16>(args, stream);
    case 32: return launchFor<32>(args, stream);
    case 64: return launchFor<64>(args, stream);
    case 128: return launchFor<128>(args, stream);
    case 256: return launchFor<256>(args, stream);
    default: throw NativeError("unsupported_architecture", "attention: unsupported head dim " + std::to_string(args.headDim));
  }
}

}  // namespace ferrum
