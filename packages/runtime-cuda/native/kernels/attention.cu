// Paged decode attention over the token pool (page size 1: kvIndices lists the slots of each sequence, cached
// prefix first); any row works, prefill rows included (causality is in rowKvLen). One block of 128 threads
// per (row, kv head, group chunk, split). The block serves G query heads that share the kv head (GQA; G is
// the group rounded up to 1, 2, 4 or 8, larger groups take several blocks), so each K/V row is read once per
// block, and walks its split's kv range in chunks of C = 16-64 entries (chunkEntries):
//   1. scores: D/16 (or D/8) lanes per key, 16-byte loads, a short shuffle reduction; every K and V load of
//      the chunk is issued up front (the V rows this thread multiplies in step 3 are prefetched here), so a
//      chunk costs one memory round trip where the registers hold all its loads at once (a half chunk, see
//      chunkEntries), and two where they do not;
//   2. softmax: one warp per head takes the chunk's max and sum and rescales the running (m, l) online;
//   3. P·V: threads over (8- or 4-dim slices of the head) × (key subsets), accumulators in registers; the
//      subsets are summed through shuffles and shared memory once, at the end.
// The next chunk's slot indices are fetched while the current chunk is scored. Before it waits for the kernels
// before it (kernels/launch.cuh), a block pulls the K and V rows of its split's first entries into L2. With
// several splits each split writes an unnormalized partial (a split past the row's end writes m = -inf, l = 0)
// and attentionCombineKernel merges them. Numerics: q × scale, scores, softmax and accumulation in f32.
// Decode graphs fuse launchQkvRope's work in (AttentionArgs::fuseRope, fusedRope below): measured on the H100 with
// a Qwen3-4B shape, GPU time a step B=1 3.26 → 3.20-3.24 ms and B=32 5.03-5.05 → 5.00 ms.
#include <cfloat>
#include <type_traits>

#include "../cuda-check.h"
#include "../step-splits.h"
#include "attention-partials.cuh"
#include "device-math.cuh"
#include "head-dims.h"
#include "kernels.h"
#include "launch.cuh"
#include "qk-rope-head.cuh"

namespace ferrum {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
static_assert(kMaxSplits <= 32, "the combine kernel gives each split one lane");

// Launches of at least this many kv splits (B ≤ 8 for 8 kv heads on the H100) count as latency-bound (chunkEntries).
constexpr int kLatencyBoundSplits = 8;

/**
 * Entries of a chunk. K and V of a chunk are in flight at once, so it is bounded by registers: chunk × D at most 8192
 * elements, 4096 with 8 heads (whose P·V takes more), or 4096 for `latencyBound` launches. At 8192 (64 entries of a
 * 128-dim head) the compiler, held to 128 registers, issues the V loads only after the K loads' scores: two round
 * trips a chunk. At 4096 every load goes out at once: one round trip for half the entries. That pays where a block's
 * few chunks' latency is the launch's time (few rows); with many rows the longer chunks' fewer rounds win. Measured
 * on the H100 with a Qwen3-4B shape, decode graphs, GPU time a step: 8192 → 4096 took B = 1 3.16 → 3.13 ms at 540
 * cached entries and 3.18 → 3.12 at 2,048, and B = 2 3.37 → 3.32; B = 8 was unchanged and B = 32 read 4.87 → 4.90.
 */
template <int D, int G>
constexpr int chunkEntries(bool latencyBound) {
  const int budget = G >= 8 || latencyBound ? 4096 : 8192;
  return budget / D < 64 ? budget / D : 64;
}

// Compile-time geometry of one (head dim, heads per block, chunk entries) instantiation.
template <int D, int G, int C>
struct Geometry {
  // Head dims one lane scores per key: 16 (two 16-byte loads), or 8 where 16 would keep too much of q in
  // registers (8 heads) or leave lanes idle (D = 16).
  static constexpr int kScoreDims = D == 16 || G >= 8 ? 8 : 16;
  static constexpr int kScoreVecs = kScoreDims / 8;      // 16-byte K loads per lane per key
  static constexpr int kLanesPerKey = D / kScoreDims;    // 2..32
  static constexpr int kKeysPerWarp = 32 / kLanesPerKey;
  static constexpr int kKeysPerPass = kKeysPerWarp * kWarps;
  static constexpr int kChunk = C;
  static constexpr int kPasses = kChunk / kKeysPerPass;  // keys each lane scores per chunk
  // P·V: a thread accumulates kSliceDims dims of every head (G × kSliceDims registers), so 8 heads take
  // 4-dim slices.
  static constexpr int kSliceDims = G >= 8 ? 4 : 8;
  static constexpr int kSlices = D / kSliceDims;       // slices of a V row
  static constexpr int kSubsets = kThreads / kSlices;  // key subsets of P·V
  static constexpr int kKeysPerThread = kChunk / kSubsets;
  // Partial P·V sums left after the in-warp shuffles: one per warp, or one per subset when a subset spans warps.
  static constexpr int kPartSums = kSlices <= 32 ? kWarps : kSubsets;
  static_assert(kChunk % kKeysPerPass == 0 && kPasses >= 1, "scoring passes must tile the chunk");
  static_assert(kThreads % kSlices == 0 && kChunk % kSubsets == 0 && kKeysPerThread >= 1,
                "P·V threads must tile the chunk");
};

// Entries of a split whose K and V rows a block pulls into L2 before its wait.
constexpr int kPrefetchEntries = 64;

// A hint that brings the 128-byte line holding p into L2; loads after it still read the current contents.
__device__ __forceinline__ void prefetchL2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// bf16 pairs (low half first) to floats.
template <int N>
__device__ __forceinline__ void unpack(const uint32_t* w, float* f) {
#pragma unroll
  for (int i = 0; i < N / 2; i++) {
    f[2 * i] = __uint_as_float(w[i] << 16);
    f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) { unpack<8>(&raw.x, f); }

// N (4 or 8) consecutive bf16 of one V row, or zeros for slot -1.
template <int N>
struct VSlice {
  using Raw = typename std::conditional<N == 8, uint4, uint2>::type;
  Raw raw;
  __device__ __forceinline__ void load(const bf16* p, bool valid) {
    if (valid) {
      raw = *reinterpret_cast<const Raw*>(p);
    } else {
      raw = Raw{};
    }
  }
  __device__ __forceinline__ void get(float (&f)[N]) const { unpack<N>(&raw.x, f); }
};

struct BlockWork {
  int listPos, row, outRow, kvHead, head0, numGroup, begin, end;
};

// Which (row, kv head, heads, kv range) this block serves; begin >= end for a split past the row's end.
template <int G>
__device__ __forceinline__ BlockWork blockWork(const AttentionArgs& a) {
  BlockWork w;
  w.listPos = blockIdx.x;
  w.row = a.rowList != nullptr ? a.rowList[w.listPos] : w.listPos;
  w.outRow = a.compactOut ? w.listPos : w.row;
  const int group = a.numHeads / a.numKvHeads;
  const int groupBlocks = (group + G - 1) / G;
  w.kvHead = blockIdx.y / groupBlocks;
  const int g0 = (blockIdx.y % groupBlocks) * G;
  w.numGroup = min(G, group - g0);
  w.head0 = w.kvHead * group + g0;
  const int kvLen = a.rowKvLen[w.row];
  // splitSize 0 (decode graphs): the row cuts its own kv range into numSplits pieces of whole tiles.
  const int splitSize = a.splitSize > 0
                            ? a.splitSize
                            : ((kvLen + a.numSplits - 1) / a.numSplits + kAttentionTile - 1) / kAttentionTile * kAttentionTile;
  w.begin = min(kvLen, static_cast<int>(blockIdx.z) * splitSize);
  w.end = min(kvLen, w.begin + splitSize);
  return w;
}

// The fused launchQkvRope work of a block (AttentionArgs::fuseRope): its q heads, a warp a head, into qs as
// qkvRopeKernel would have left them in memory (rounded to bf16), times the scale; and, if its split ends at the
// row's last entry, that entry's K (warp 0) and V (warp 1) into the pools. The chunk loop's first barrier makes
// those writes visible to the block's own K/V loads; no other block reads the entry this step.
template <int D, int G>
__device__ __forceinline__ void fusedRope(const AttentionArgs& a, const BlockWork& w, const RopeLane& r,
                                          const float (&qNorm)[ropeLaneElements(D)],
                                          const float (&kNorm)[ropeLaneElements(D)], const float* cosS,
                                          const float* sinS, float (&qs)[G][D]) {
  constexpr int ER = ropeLaneElements(D);
  const int warp = threadIdx.x >> 5;
  const QkvRopeArgs& p = a.rope;
  const bf16* row = a.q + static_cast<size_t>(w.row) * a.qRowStride;
  const bool hasBias = p.bias != nullptr;
  float cosv[ER], sinv[ER];
  laneAngles<ER>(r, cosS, sinS, cosv, sinv);
  for (int g = warp; g < G; g += kWarps) {
    float x[ER] = {}, bias[ER] = {};
    if (g < w.numGroup) {  // whole warps
      const int head = w.head0 + g;
      loadHead<ER, 1>(row + static_cast<size_t>(head) * D + r.d0, x);
      if (hasBias) loadHead<ER, 1>(p.bias + head * D + r.d0, bias);
      transformHead<ER>(x, bias, hasBias, qNorm, p.qNorm != nullptr, true, r, cosv, sinv, p.eps, D);
    }
    if (r.active) {
#pragma unroll
      for (int e = 0; e < ER; e++) qs[g][r.d0 + e] = roundBf16(x[e]) * a.scale;
    }
  }
  if (warp >= 2 || w.end != a.rowKvLen[w.row]) return;
  const int slot = p.slotMapping[w.row];  // -1: a decode graph's padded row, whose K/V are not kept
  const bool isV = warp == 1;
  const int head = a.numHeads + (isV ? a.numKvHeads : 0) + w.kvHead;
  float x[ER], bias[ER] = {};
  loadHead<ER, 1>(row + static_cast<size_t>(head) * D + r.d0, x);
  if (hasBias) loadHead<ER, 1>(p.bias + head * D + r.d0, bias);
  transformHead<ER>(x, bias, hasBias, kNorm, !isV && p.kNorm != nullptr, !isV, r, cosv, sinv, p.eps, D);
  if (slot < 0 || !r.active) return;
  bf16* pool = isV ? p.vCache : p.kCache;
  storeHead<ER, 1>(pool + static_cast<size_t>(slot) * a.numKvHeads * D + static_cast<size_t>(w.kvHead) * D + r.d0, x);
}

template <int D, int G, int C>
__global__ void __launch_bounds__(kThreads, 4) attentionKernel(AttentionArgs a) {
  using Geo = Geometry<D, G, C>;
  __shared__ __align__(16) float qs[G][D];            // q × scale (zeros for heads past numGroup)
  __shared__ float sc[G][C];                          // scores, then probabilities, of the chunk
  __shared__ int slotBuf[2][C];                       // the chunk's slots (-1: past the split's end), double-buffered
  __shared__ float mS[G], lS[G], alphaS[G];           // running max / sum per head, last rescale factor
  __shared__ __align__(16) float red[Geo::kPartSums][G][D];  // P·V partial sums, merged at the end
  __shared__ float cosS[D / 2], sinS[D / 2];          // fused RoPE: the row's rotation
  constexpr int ER = ropeLaneElements(D);             // fused RoPE: a lane's elements of a head

  allowDependentLaunch();
  // Before the wait, reads of the step's upload only (rows, kv lists: copied before the step's first kernel
  // started, which every later kernel's start follows), and L2 prefetches of the pools. A prefetch is a hint,
  // so the entry the RoPE kernel before this one writes may be among them.
  const BlockWork w = blockWork<G>(a);
  const int t = threadIdx.x;
  const int warp = t >> 5;
  const int lane = t & 31;
  const int* slots = a.kvIndices + a.rowKvStart[w.row];
  const RopeLane r = RopeLane::of<ER>(lane, D);
  float qNorm[ER] = {}, kNorm[ER] = {};
  if (a.fuseRope) {
    ropeTable(a.rope.positions[w.row], a.rope.invFreq, D, cosS, sinS);
    if (a.rope.qNorm != nullptr) loadHead<ER, 1>(a.rope.qNorm + r.d0, qNorm);
    if (a.rope.kNorm != nullptr) loadHead<ER, 1>(a.rope.kNorm + r.d0, kNorm);
  }
  {
    constexpr int kLines = D * 2 >= 128 ? D * 2 / 128 : 1;  // 128-byte lines of a K (or V) row
    const int entries = min(w.end - w.begin, kPrefetchEntries);
    for (int i = t; i < entries * 2 * kLines; i += kThreads) {
      const int line = i % (2 * kLines);
      const bf16* pool = line < kLines ? a.kCache : a.vCache;
      const size_t slot = static_cast<size_t>(slots[w.begin + i / (2 * kLines)]);
      prefetchL2(pool + slot * a.numKvHeads * D + w.kvHead * D + (line % kLines) * 64);
    }
  }
  waitForPriorGrids();

  if (w.begin >= w.end) {  // nothing to attend: a neutral partial (or zeros for an empty row without splits)
    if (a.numSplits > 1) {
      if (t < w.numGroup) partialMl(a)[partialIndex(a, w.listPos, w.head0 + t, blockIdx.z)] = make_float2(-INFINITY, 0.f);
    } else {
      for (int i = t; i < w.numGroup * D; i += kThreads) {
        a.out[static_cast<size_t>(w.outRow) * a.numHeads * D + static_cast<size_t>(w.head0) * D + i] = __float2bfloat16(0.f);
      }
    }
    return;
  }

  if (t < C) slotBuf[0][t] = w.begin + t < w.end ? slots[w.begin + t] : -1;
  if (t < G) {
    mS[t] = -INFINITY;
    lS[t] = 0.f;
  }
  const bf16* qRow = a.q + static_cast<size_t>(w.row) * a.qRowStride + static_cast<size_t>(w.head0) * D;
  if (a.fuseRope) {
    fusedRope<D, G>(a, w, r, qNorm, kNorm, cosS, sinS, qs);
  } else {
    for (int i = t; i < G * D / 8; i += kThreads) {
      float f[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
      if (i / (D / 8) < w.numGroup) unpack8(*reinterpret_cast<const uint4*>(qRow + i * 8), f);
#pragma unroll
      for (int e = 0; e < 8; e++) (&qs[0][0])[i * 8 + e] = f[e] * a.scale;
    }
  }

  const int kvDim = a.numKvHeads * D;
  const bf16* kBase = a.kCache + static_cast<size_t>(w.kvHead) * D;
  const bf16* vBase = a.vCache + static_cast<size_t>(w.kvHead) * D;
  // Scoring layout: lane = sub × kKeysPerWarp + key, so a shuffle xor by multiples of kKeysPerWarp sums subs.
  const int scoreKey = warp * Geo::kKeysPerWarp + lane % Geo::kKeysPerWarp;
  const int sub = lane / Geo::kKeysPerWarp;
  // P·V layout: thread = subset × kSlices + slice.
  constexpr int E = Geo::kSliceDims;
  const int slice = t % Geo::kSlices;
  const int subset = t / Geo::kSlices;

  float acc[G][E];
#pragma unroll
  for (int g = 0; g < G; g++) {
#pragma unroll
    for (int e = 0; e < E; e++) acc[g][e] = 0.f;
  }

  for (int base = w.begin, buf = 0; base < w.end; base += C, buf ^= 1) {
    const int nextSlot = t < C && base + C + t < w.end ? slots[base + C + t] : -1;
    __syncthreads();  // slotBuf[buf] and qs written; the previous chunk's P·V is done with sc and alphaS

    // Every load of the chunk first: K for scoring, V for this thread's P·V keys.
    VSlice<E> vRaw[Geo::kKeysPerThread];
#pragma unroll
    for (int j = 0; j < Geo::kKeysPerThread; j++) {
      const int slot = slotBuf[buf][subset + j * Geo::kSubsets];
      vRaw[j].load(vBase + static_cast<size_t>(slot) * kvDim + slice * E, slot >= 0);
    }
    uint4 kRaw[Geo::kPasses][Geo::kScoreVecs];
    bool valid[Geo::kPasses];
#pragma unroll
    for (int p = 0; p < Geo::kPasses; p++) {
      const int slot = slotBuf[buf][scoreKey + p * Geo::kKeysPerPass];
      valid[p] = slot >= 0;
#pragma unroll
      for (int c = 0; c < Geo::kScoreVecs; c++) {
        const int d0 = 8 * (sub + c * Geo::kLanesPerKey);
        kRaw[p][c] = valid[p] ? *reinterpret_cast<const uint4*>(kBase + static_cast<size_t>(slot) * kvDim + d0)
                              : make_uint4(0, 0, 0, 0);
      }
    }

#pragma unroll
    for (int p = 0; p < Geo::kPasses; p++) {
      float s[G];
#pragma unroll
      for (int g = 0; g < G; g++) s[g] = 0.f;
#pragma unroll
      for (int c = 0; c < Geo::kScoreVecs; c++) {
        const int d0 = 8 * (sub + c * Geo::kLanesPerKey);
        float k[8];
        unpack8(kRaw[p][c], k);
#pragma unroll
        for (int g = 0; g < G; g++) {
          const float4 q0 = *reinterpret_cast<const float4*>(&qs[g][d0]);
          const float4 q1 = *reinterpret_cast<const float4*>(&qs[g][d0 + 4]);
          s[g] += k[0] * q0.x + k[1] * q0.y + k[2] * q0.z + k[3] * q0.w + k[4] * q1.x + k[5] * q1.y + k[6] * q1.z +
                  k[7] * q1.w;
        }
      }
#pragma unroll
      for (int g = 0; g < G; g++) {
#pragma unroll
        for (int o = Geo::kKeysPerWarp; o < 32; o <<= 1) s[g] += __shfl_xor_sync(0xffffffffu, s[g], o);
        if (sub == g % Geo::kLanesPerKey) sc[g][scoreKey + p * Geo::kKeysPerPass] = valid[p] ? s[g] : -INFINITY;
      }
    }
    if (t < C) slotBuf[buf ^ 1][t] = nextSlot;
    __syncthreads();

    // Online softmax per head; the chunk's first entry is always valid, so the new max is finite.
    for (int g = warp; g < G; g += kWarps) {
      float x[(C + 31) / 32];
      float mx = -INFINITY;
#pragma unroll
      for (int i = 0; i < (C + 31) / 32; i++) {
        x[i] = lane + 32 * i < C ? sc[g][lane + 32 * i] : -INFINITY;
        mx = fmaxf(mx, x[i]);
      }
      const float mOld = mS[g];
      const float mNew = fmaxf(mOld, warpMax(mx));
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < (C + 31) / 32; i++) {
        const float pr = __expf(x[i] - mNew);
        if (lane + 32 * i < C) sc[g][lane + 32 * i] = pr;
        sum += pr;
      }
      sum = warpSum(sum);
      if (lane == 0) {
        const float alpha = __expf(mOld - mNew);  // 0 on the first chunk (mOld = -inf)
        alphaS[g] = alpha;
        lS[g] = lS[g] * alpha + sum;
        mS[g] = mNew;
      }
    }
    __syncthreads();

#pragma unroll
    for (int g = 0; g < G; g++) {
      const float alpha = alphaS[g];
#pragma unroll
      for (int e = 0; e < E; e++) acc[g][e] *= alpha;
    }
#pragma unroll
    for (int j = 0; j < Geo::kKeysPerThread; j++) {
      float v[E];
      vRaw[j].get(v);  // zeros past the split's end, where p is 0 as well
#pragma unroll
      for (int g = 0; g < G; g++) {
        const float p = sc[g][subset + j * Geo::kSubsets];
#pragma unroll
        for (int e = 0; e < E; e++) acc[g][e] += p * v[e];
      }
    }
  }

  // Sum the key subsets: first those sharing a warp (shuffles), then the rest (shared memory).
#pragma unroll
  for (int o = Geo::kSlices; o < 32; o <<= 1) {
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
      for (int e = 0; e < E; e++) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
    }
  }
  if (Geo::kSlices > 32 || lane < Geo::kSlices) {
    const int part = Geo::kSlices <= 32 ? warp : subset;
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
      for (int e = 0; e < E; e += 4) {
        *reinterpret_cast<float4*>(&red[part][g][slice * E + e]) =
            make_float4(acc[g][e], acc[g][e + 1], acc[g][e + 2], acc[g][e + 3]);
      }
    }
  }
  __syncthreads();

  for (int i = t; i < w.numGroup * D; i += kThreads) {
    const int g = i / D;
    const int d = i % D;
    float o = 0.f;
#pragma unroll
    for (int k = 0; k < Geo::kPartSums; k++) o += red[k][g][d];
    const int head = w.head0 + g;
    if (a.numSplits == 1) {
      a.out[static_cast<size_t>(w.outRow) * a.numHeads * D + static_cast<size_t>(head) * D + d] = __float2bfloat16(o / lS[g]);
    } else {
      const size_t at = partialIndex(a, w.listPos, head, blockIdx.z);
      a.partial[at * D + d] = o;
      if (d == 0) partialMl(a)[at] = make_float2(mS[g], lS[g]);
    }
  }
}

// Merges the splits of one (row, head), one block each: out = Σ_s O_s e^{m_s - M} / Σ_s l_s e^{m_s - M}.
// Lane s of every warp holds split s's weight (numSplits <= 32); warp w sums splits w, w + 4, ... with all its
// loads independent, and the four warps' sums meet in shared memory. A split with m = -inf (past the row's
// end) has weight 0 and its O, not written this step, is never loaded.
template <int D>
__global__ void __launch_bounds__(kThreads) attentionCombineKernel(AttentionArgs a) {
  constexpr int E = D >= 128 ? D / 32 : 4;  // dims per lane; lanes past D / E idle
  constexpr int kSplitsPerWarp = (kMaxSplits + kWarps - 1) / kWarps;
  __shared__ __align__(16) float sums[kWarps][D];
  beginDependentWork();
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int listPos = blockIdx.x;
  const int head = blockIdx.y;
  const size_t first = partialIndex(a, listPos, head, 0);
  const float2 ml = lane < a.numSplits ? partialMl(a)[first + lane] : make_float2(-INFINITY, 0.f);
  const float mMax = warpMax(ml.x);
  const float weight = ml.x != -INFINITY ? __expf(ml.x - mMax) : 0.f;
  const float sum = warpSum(weight * ml.y);
  const int d0 = lane * E;
  float out[E];
#pragma unroll
  for (int e = 0; e < E; e++) out[e] = 0.f;
#pragma unroll
  for (int i = 0; i < kSplitsPerWarp; i++) {
    const int s = warp + i * kWarps;
    const float w = __shfl_sync(0xffffffffu, weight, s);  // 0 for splits past numSplits
    const float* o = a.partial + (first + s) * D + d0;
#pragma unroll
    for (int e = 0; e < E; e += 4) {
      const float4 v = w > 0.f && d0 < D ? *reinterpret_cast<const float4*>(o + e) : make_float4(0.f, 0.f, 0.f, 0.f);
      out[e] += w * v.x;
      out[e + 1] += w * v.y;
      out[e + 2] += w * v.z;
      out[e + 3] += w * v.w;
    }
  }
  if (d0 < D) {
#pragma unroll
    for (int e = 0; e < E; e += 4) {
      *reinterpret_cast<float4*>(&sums[warp][d0 + e]) = make_float4(out[e], out[e + 1], out[e + 2], out[e + 3]);
    }
  }
  __syncthreads();
  const int row = a.rowList != nullptr && !a.compactOut ? a.rowList[listPos] : listPos;
  const float inv = sum > 0.f ? 1.f / sum : 0.f;  // sum 0: the row attended to nothing
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float o = 0.f;
#pragma unroll
    for (int k = 0; k < kWarps; k++) o += sums[k][d];
    a.out[static_cast<size_t>(row) * a.numHeads * D + static_cast<size_t>(head) * D + d] = __float2bfloat16(o * inv);
  }
}

template <int D, int G>
void launchWith(const AttentionArgs& a, cudaStream_t stream) {
  const int group = a.numHeads / a.numKvHeads;
  const dim3 grid(a.numRows, a.numKvHeads * ((group + G - 1) / G), a.numSplits);
  // Few rows: chooseSplits cuts each row into many splits to fill the GPU, and the launch's time is a block's
  // latency (chunkEntries).
  const auto kernel = a.numSplits >= kLatencyBoundSplits ? attentionKernel<D, G, chunkEntries<D, G>(true)>
                                                         : attentionKernel<D, G, chunkEntries<D, G>(false)>;
  launchKernel("attentionKernel", kernel, grid, kThreads, 0, stream, a);
  if (a.numSplits > 1) {
    launchKernel("attentionCombineKernel", attentionCombineKernel<D>, dim3(a.numRows, a.numHeads), kThreads, 0, stream,
                 a);
  }
}

// Heads per block: the group rounded up to a power of two, at most 8 (larger groups take several blocks).
template <int D>
void launchFor(const AttentionArgs& a, cudaStream_t stream) {
  const int group = a.numHeads / a.numKvHeads;
  if (group > 4) return launchWith<D, 8>(a, stream);
  if (group > 2) return launchWith<D, 4>(a, stream);
  if (group == 2) return launchWith<D, 2>(a, stream);
  return launchWith<D, 1>(a, stream);
}

}  // namespace

// A kv head's query heads must share one block (launchFor's G is at most 8): that block writes the new K/V.
bool attentionFusesRope(int numHeads, int numKvHeads) { return numHeads / numKvHeads <= 8; }

void launchAttention(const AttentionArgs& args, cudaStream_t stream) {
  if (args.numRows == 0) return;
  if (args.numKvHeads <= 0 || args.numHeads % args.numKvHeads != 0 || args.numSplits < 1 || args.numSplits > 32) {
    throw NativeError("invalid_argument", "attention: heads must be a multiple of kv heads and splits 1 to 32");
  }
  if (args.fuseRope && (args.rowList != nullptr || !attentionFusesRope(args.numHeads, args.numKvHeads))) {
    // A row list can leave rows' new K/V unwritten, and a group over 8 heads spans blocks that would each write it.
    throw NativeError("invalid_argument", "attention: fused RoPE takes rows 0 .. numRows - 1 and at most 8 heads a kv head");
  }
  withHeadDim(args.headDim, "attention", [&](auto d) { launchFor<decltype(d)::value>(args, stream); });
}

}  // namespace ferrum
