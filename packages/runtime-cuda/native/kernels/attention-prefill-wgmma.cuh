// What the two wgmma prefill attention kernels share (attention-prefill-wgmma.cu, whose whole block gathers K and
// V for two blocks a multiprocessor, and attention-prefill-producer.cu, where a producer warp gathers them for one):
// the 128-byte-swizzled tile layout wgmma reads (wgmma.cuh has the instructions), the gathers' copies, and a
// warpgroup's step of S = Q·Kᵀ, online softmax and O += P·V.
// Layout: a 64-row tile is D/64 panels of 64 rows × 128 bytes (64 dims), and the 16-byte chunk c of row r sits at
// chunk c ^ (r % 8) of its row, which also keeps the cp.async gathers free of bank conflicts. Q, K and V share it:
// Q and K are read K-major (dims contiguous) for S, V MN-major (the same dims contiguous, transposed by the
// instruction) for O.
// Each step's products are a handful of asynchronous instructions issued by a warpgroup (one a head):
//   - S = Q·Kᵀ: D/16 wgmma m64n64k16 reading Q and K straight from shared memory;
//   - O += P·V: P from registers (the bf16 hi + lo pair of attention-prefill-tile.cuh, so the numerics are the
//     mma.sync kernel's) and V from shared memory, 2 × 4 wgmma m64nDk16.
#pragma once

#include <cstdint>
#include <string>

#include "../cuda-check.h"
#include "../native-error.h"
#include "attention-prefill-tile.cuh"
#include "launch.cuh"
#include "tensor-core.cuh"
#include "wgmma.cuh"

namespace ferrum {
namespace wgmma {

using prefill::kKeys;
using prefill::kRows;
static_assert(kRows == kKeys, "Q and each K or V buffer share one tile layout");

// A tile of 64 rows × D dims in the swizzled layout (above).
template <int D>
struct SwizzledTile {
  static constexpr uint32_t kPanelBytes = kRows * 128;
  static constexpr uint32_t kBytes = D / 64 * kPanelBytes;
  /** Byte offset of 16-byte chunk `chunk` (dims 8·chunk ..) of row `row`. */
  __device__ static __forceinline__ uint32_t offset(int row, int chunk) {
    return chunk / 8 * kPanelBytes + row * 128 + ((chunk % 8) ^ (row % 8)) * 16;
  }
  /** Where k-step s (dims 16s .. 16s + 15) of a K-major operand starts. */
  static constexpr uint32_t stepOffset(int s) { return s / 4 * kPanelBytes + s % 4 * 32; }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Issues S = Q·Kᵀ for one step: D/16 k-steps of 16 dims, Q at qTile and K at kTile (after a wgmmaFence).
template <int D>
__device__ __forceinline__ void issueScores(float (&p)[kKeys / 8][4], uint32_t qTile, uint32_t kTile) {
  using Tile = SwizzledTile<D>;
#pragma unroll
  for (int s = 0; s < D / 16; s++) {
    wgmmaKMajor(p, descriptor(qTile + Tile::stepOffset(s), 16), descriptor(kTile + Tile::stepOffset(s), 16), s > 0);
  }
}

// Issues O += P·V for one step, P packed in hi and lo (after a wgmmaFence): k-step j covers keys 16j .. 16j + 15,
// 16 rows (2,048 bytes) of the V tile at vTile.
template <int D>
__device__ __forceinline__ void issueValues(float (&o)[D / 8][4], const uint32_t (&hi)[kKeys / 16][4],
                                            const uint32_t (&lo)[kKeys / 16][4], uint32_t vTile) {
#pragma unroll
  for (int j = 0; j < kKeys / 16; j++) {
    const uint64_t v = descriptor(vTile + j * 16 * 128, SwizzledTile<D>::kPanelBytes);
    wgmmaRegisterA(o, hi[j], v);
    wgmmaRegisterA(o, lo[j], v);
  }
}

// One step's P (probabilities) as the bf16 hi + lo pairs of P·V's A fragments.
__device__ __forceinline__ void packStep(const float (&p)[kKeys / 8][4], uint32_t (&hi)[kKeys / 16][4],
                                         uint32_t (&lo)[kKeys / 16][4]) {
#pragma unroll
  for (int j = 0; j < kKeys / 16; j++) prefill::packP(p, j, hi[j], lo[j]);
}

// S = Q·Kᵀ for one step, waited for.
template <int D>
__device__ __forceinline__ void scoresStep(float (&p)[kKeys / 8][4], uint32_t qTile, uint32_t kTile) {
  wgmmaFence();
  issueScores<D>(p, qTile, kTile);
  wgmmaCommit();
  wgmmaWaitAll();
  holdRegisters(p);
}

// O += P·V for one step, waited for.
template <int D>
__device__ __forceinline__ void valuesStep(float (&o)[D / 8][4], const float (&p)[kKeys / 8][4], uint32_t vTile) {
  uint32_t hi[kKeys / 16][4], lo[kKeys / 16][4];
  packStep(p, hi, lo);
  wgmmaFence();
  issueValues<D>(o, hi, lo, vTile);
  wgmmaCommit();
  wgmmaWaitAll();
  holdRegisters(o);
  holdRegisters(hi);
  holdRegisters(lo);
}

#undef FERRUM_WGMMA_N128
#undef FERRUM_WGMMA_N64
#undef FERRUM_WGMMA_TILE

// kRows rows (Q) or keys (K, V) of D dims into a swizzled tile at `tile`, one 16-byte chunk a copy, by kBy
// threads (`thread` is this one's index among them): row i from src + offsetOf(i), rows >= `valid` zero-filled.
// src already points at this thread's chunk; the rows a thread copies are a multiple of 8 apart, so its swizzled
// chunk, and thus its shared-memory offsets, are loop constants.
template <int D, int kBy, typename OffsetOf>
__device__ __forceinline__ void copyRows(uint32_t tile, const bf16* src, int valid, int thread, OffsetOf offsetOf) {
  constexpr int kChunks = D / 8;
  constexpr int kRowsPerPass = kBy / kChunks;
  static_assert(kBy % kChunks == 0 && kRowsPerPass % 8 == 0 && kRows % kRowsPerPass == 0,
                "a pass covers whole rows and keeps the swizzle phase");
  const int row0 = thread / kChunks;
  const uint32_t to0 = tile + SwizzledTile<D>::offset(row0, thread % kChunks);
#pragma unroll
  for (int j = 0; j < kRows / kRowsPerPass; j++) {
    const int row = row0 + j * kRowsPerPass;
    const bool ok = row < valid;
    copyAsync16(to0 + j * kRowsPerPass * 128, src + (ok ? offsetOf(row) : 0), ok ? 16 : 0);
  }
}

/**
 * The tile's Q rows of `head` into the swizzled tile at qTile, by a warpgroup (`t` this thread's index in it), as one
 * cp.async commit group.
 */
template <int D>
__device__ __forceinline__ void copyQ(uint32_t qTile, const PrefillAttentionArgs& a, const prefill::TileWork& w,
                                      int head, int t) {
  const size_t stride = a.qRowStride;
  copyRows<D, prefill::kThreads>(qTile, a.q + static_cast<size_t>(w.firstRow) * stride + head * D + t % (D / 8) * 8,
                                 w.numRows, t, [&](int row) { return row * stride; });
  commitAsync();
}

/** Zeroes an accumulator. */
template <int N>
__device__ __forceinline__ void zero(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; i++) r[i][0] = r[i][1] = r[i][2] = r[i][3] = 0.f;
}

/** A consumer warpgroup's tile: this thread's two rows, the running O and row stats, and the step's scores. */
template <int D>
struct Consumer {
  int warp;
  int row0;  // this thread's two rows in the tile: row0, row0 + 8
  float scaleLog2;
  float o[D / 8][4], p[kKeys / 8][4];
  uint32_t hi[kKeys / 16][4], lo[kKeys / 16][4];  // a step's P, packed, between its softmax and its turn's P·V
  prefill::RowStats st;

  /** `t`: this thread's index in its warpgroup; `scale`: the attention scale. */
  __device__ __forceinline__ Consumer(int t, float scale)
      : warp(t >> 5), row0((t >> 5) * 16 + ((t & 31) >> 2)), scaleLog2(scale * prefill::kLog2e) {
    zero(o);
    zero(p);
  }

  /**
   * One step of kKeys entries from `base`: S from Q at qTile and K at kTile, the online softmax (masking where the
   * step reaches the warp's first row's limit; the tile's first row sees kvLenFirst entries), O += P·V from V at
   * vTile.
   */
  __device__ __forceinline__ void attend(uint32_t qTile, uint32_t kTile, uint32_t vTile, int base, int kvLenFirst) {
    scoresStep<D>(p, qTile, kTile);
    softmax(base, kvLenFirst);
    valuesStep<D>(o, p, vTile);
  }

  // The same steps cut into turns, for warpgroups that take turns on the tensor cores: turn j issues O += P·V of step
  // j − 1 (P packed at the end of turn j − 1) and S of step j as one group; the warpgroup then waits for it and runs
  // step j's softmax while the other warpgroup's turn runs.

  /** Issues turn j's products: P·V from V at vTile (kValues), S from Q at qTile and K at kTile (kScores). */
  template <bool kValues, bool kScores>
  __device__ __forceinline__ void issueTurn(uint32_t vTile, uint32_t qTile, uint32_t kTile) {
    wgmmaFence();
    if constexpr (kValues) issueValues<D>(o, hi, lo, vTile);
    if constexpr (kScores) issueScores<D>(p, qTile, kTile);
    wgmmaCommit();
  }

  /** Waits for the turn's products. */
  template <bool kValues, bool kScores>
  __device__ __forceinline__ void landTurn() {
    wgmmaWaitAll();
    if constexpr (kValues) {
      holdRegisters(o);
      holdRegisters(hi);
      holdRegisters(lo);
    }
    if constexpr (kScores) holdRegisters(p);
  }

  /** Step j's softmax over S (the step from `base`, as in attend), then P packed for the next turn. */
  __device__ __forceinline__ void softmaxAndPack(int base, int kvLenFirst) {
    softmax(base, kvLenFirst);
    packStep(p, hi, lo);
  }

 private:
  __device__ __forceinline__ void softmax(int base, int kvLenFirst) {
    const int limit0 = kvLenFirst + row0;
    prefill::softmaxStep(p, o, st, base, limit0, limit0 + 8, base + kKeys > kvLenFirst + warp * 16, scaleLog2);
  }
};

/**
 * The warpgroup's output rows of `head` (thread `t` of it holding c's rows): with one split, normalized, through its Q
 * tile at qTile (free once its last S has completed): each thread's bf16 pairs into the tile's swizzled layout
 * (conflict-free), a barrier of the warpgroup on named barrier `barrier`, then whole 16-byte chunks to global
 * memory, a warp whole rows a store. With splits, the f32 partials (prefill::storeRows). Why: stored straight from
 * the fragments, each warp store writes 16 bytes into each of 8 rows (four 4-byte pieces), and a block's last
 * stores held its exit. On the H100 (Qwen3-4B shape, Nsight Compute, caches warm) a layer's kernel went from
 * 20.5-20.7 to 19.6 µs for a 512-token prompt and from 127.1-127.3 to 123.4-123.7 µs for 2,048 tokens
 * (bench/results/cuda-qkv-rope-2026-11-23-pass30.md).
 */
template <int D>
__device__ __forceinline__ void storeRowsStaged(const PrefillAttentionArgs& a, const prefill::TileWork& w, int head,
                                                uint32_t qTile, int t, const Consumer<D>& c, int barrier) {
  if (a.numSplits > 1) return prefill::storeRows<D>(a, w, head, c.row0, c.o, c.st);
  using Tile = SwizzledTile<D>;
  const float2 inv = c.st.inverses();
  const float inv0 = inv.x, inv1 = inv.y;
  const uint32_t pair = 4 * (t & 3);
#pragma unroll
  for (int j = 0; j < D / 8; j++) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(c.o[j][0] * inv0, c.o[j][1] * inv0);
    const __nv_bfloat162 hi = __floats2bfloat162_rn(c.o[j][2] * inv1, c.o[j][3] * inv1);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(qTile + Tile::offset(c.row0, j) + pair),
                 "r"(*reinterpret_cast<const uint32_t*>(&lo)));
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(qTile + Tile::offset(c.row0 + 8, j) + pair),
                 "r"(*reinterpret_cast<const uint32_t*>(&hi)));
  }
  asm volatile("bar.sync %0, %1;\n" ::"r"(barrier), "n"(prefill::kThreads) : "memory");
  constexpr int kChunks = D / 8;
  const int chunk = t % kChunks;
  const size_t outStride = static_cast<size_t>(a.numHeads) * D;
  bf16* out = a.out + static_cast<size_t>(w.firstRow) * outStride + head * D + chunk * 8;
  for (int row = t / kChunks; row < w.numRows; row += prefill::kThreads / kChunks) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(qTile + Tile::offset(row, chunk)));
    *reinterpret_cast<uint4*>(out + row * outStride) = v;
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Host side: a kernel and how it is launched, over the grid (numHeads / kHeads, numTiles, numSplits) with kThreads a
// block and shared memory for alignment slack, Q of kHeads heads and kStages buffers of K and V.
template <void (*kKernel)(PrefillAttentionArgs), const char* kName, int D, int kHeads, int kThreads, int kStages>
struct Kernel {
  static constexpr auto kernel = kKernel;
  static constexpr const char* name = kName;
  static constexpr int heads = kHeads;
  static constexpr int threads = kThreads;
  static constexpr size_t bytes = kAtomBytes + (kHeads + 2 * kStages) * SwizzledTile<D>::kBytes;
};

/** K's shared-memory opt-in, once; it also loads the kernel (see preloadPrefillAttention). */
template <typename K>
void prepare(K) {
  static const cudaError_t optIn =
      cudaFuncSetAttribute(K::kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, K::bytes);
  checkCuda(optIn, K::name);
}

template <typename K>
void launch(K k, const PrefillAttentionArgs& a, cudaStream_t stream) {
  prepare(k);
  launchKernel(K::name, K::kernel, dim3(a.numHeads / K::heads, a.numTiles, a.numSplits), K::threads, K::bytes, stream,
               a);
}

/** Calls visit(Kernel<D, heads>{}) for `args`' head dim (64 or 128) and heads a block. */
template <template <int, int> class Kernel, typename Visit>
void withShape(const PrefillAttentionArgs& args, Visit&& visit) {
  const bool pairs = prefillWgmmaHeadsPerBlock(args) == 2;
  switch (args.headDim) {
    case 64: return pairs ? visit(Kernel<64, 2>{}) : visit(Kernel<64, 1>{});
    case 128: return pairs ? visit(Kernel<128, 2>{}) : visit(Kernel<128, 1>{});
    default:
      throw NativeError("internal", "prefill attention (wgmma): unsupported head dim " + std::to_string(args.headDim));
  }
}

}  // namespace wgmma
}  // namespace ferrum
