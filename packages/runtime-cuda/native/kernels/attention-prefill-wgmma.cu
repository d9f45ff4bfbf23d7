// Prefill attention on Hopper's warpgroup MMA (wgmma, sm_90a): the tiles, splits, softmax and output of the
// mma.sync kernel (attention-prefill.cu, attention-prefill-tile.cuh), with each step's two products issued by each
// of the block's warpgroups (one a head) as a handful of asynchronous instructions:
//   - S = Q·Kᵀ: D/16 wgmma m64n64k16 reading Q and K straight from shared memory (no ldmatrix, no Q fragments
//     held in registers);
//   - O += P·V: P from registers (the same bf16 hi + lo pair, so the numerics are the mma.sync kernel's) and V
//     from shared memory read transposed by the tensor cores, 2 × 4 wgmma m64nDk16.
// Why: on the H100 the mma.sync kernel issued ~1,040 instructions a warp per 64-key step, 192 of them MMAs, and
// with two blocks a multiprocessor it stalled on their dependencies (ldmatrix → mma chains) at ~0.3 instructions
// a cycle per scheduler; most of that stream goes away here.
// A block serves the same tile for two query heads of one kv head where the group allows (one warpgroup each):
// K and V are gathered into shared memory once for both, which halves the traffic from L2 (a one-head block pulls
// its kv head's whole range for one head; on the H100 two heads a block took a 2,048-token prefill's attention
// from 850 to 510 µs for 4 layers). Blocks are ordered longest tile first
// (a sequence's later tiles see more of the causal range), so the longest ones do not start last.
// K and V are gathered with cp.async kStages - 1 steps ahead: 1 (double buffering) where the grid keeps two blocks
// on a multiprocessor, 3 where it leaves one (a short chunk over a long prefix: a few steps a block, each waiting on
// its gather's latency with two buffers).
// Shared memory holds Q and kStages buffers of K and V in the 128-byte-swizzled layout wgmma reads: a 64-row tile is
// D/64 panels of 64 rows × 128 bytes (64 dims), and the 16-byte chunk c of row r sits at chunk c ^ (r % 8) of
// its row, which also keeps the cp.async gathers free of bank conflicts. K and V share that layout: K is read
// K-major (dims contiguous) for S, V MN-major (the same dims contiguous, transposed by the instruction) for O.
// Launched only where prefillWgmmaAvailable says so; other builds and devices run the mma.sync kernel.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../cuda-check.h"
#include "attention-prefill-tile.cuh"
#include "attention-prefill.h"
#include "launch.cuh"
#include "tensor-core.cuh"

namespace ferrum {
namespace {

using prefill::kKeys;
using prefill::kRows;
using prefill::kThreads;
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
constexpr uint32_t kAtomBytes = 1024;  // 8 rows × 128 bytes: the swizzle's period, and the stride of 8-row groups

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// A wgmma shared-memory matrix descriptor with 128-byte swizzling: start address, leading-dimension byte offset
// (K-major: unused; MN-major: from one 64-wide panel to the next), stride byte offset (8-row groups).
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leadingBytes) {
  return static_cast<uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(leadingBytes >> 4) << 16) |
         (static_cast<uint64_t>(kAtomBytes >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaWaitAll() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Makes this thread's generic-proxy shared-memory writes (cp.async) visible to the async proxy wgmma reads through.
__device__ __forceinline__ void fenceAsyncProxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// wgmma reads and writes these registers asynchronously: after its wait, each is passed through an empty asm so
// the compiler neither reads an accumulator nor reuses an operand register before the wait.
__device__ __forceinline__ void holdRegister(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void holdRegister(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
template <typename T, int R, int C>
__device__ __forceinline__ void holdRegisters(T (&r)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; i++) {
#pragma unroll
    for (int j = 0; j < C; j++) holdRegister(r[i][j]);
  }
}

// A wgmma's accumulator operands: n-tile t's four registers (rows g and g + 8, columns 2c and 2c + 1), and the
// 8 or 16 n-tiles of an m64n64 or m64n128 result, in the instruction's register order.
#define FERRUM_WGMMA_TILE(d, t) "+f"(d[t][0]), "+f"(d[t][1]), "+f"(d[t][2]), "+f"(d[t][3])
#define FERRUM_WGMMA_N64(d)                                                                                      \
  FERRUM_WGMMA_TILE(d, 0), FERRUM_WGMMA_TILE(d, 1), FERRUM_WGMMA_TILE(d, 2), FERRUM_WGMMA_TILE(d, 3),            \
      FERRUM_WGMMA_TILE(d, 4), FERRUM_WGMMA_TILE(d, 5), FERRUM_WGMMA_TILE(d, 6), FERRUM_WGMMA_TILE(d, 7)
#define FERRUM_WGMMA_N128(d)                                                                                     \
  FERRUM_WGMMA_N64(d), FERRUM_WGMMA_TILE(d, 8), FERRUM_WGMMA_TILE(d, 9), FERRUM_WGMMA_TILE(d, 10),              \
      FERRUM_WGMMA_TILE(d, 11), FERRUM_WGMMA_TILE(d, 12), FERRUM_WGMMA_TILE(d, 13), FERRUM_WGMMA_TILE(d, 14),    \
      FERRUM_WGMMA_TILE(d, 15)

// d (64×64 of the warpgroup, f32) = A·B, or += A·B with `accumulate`: A 64×16 and B 16×64, both K-major in shared
// memory (Q and K: dims contiguous).
__device__ __forceinline__ void wgmmaScores(float (&d)[8][4], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : FERRUM_WGMMA_N64(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// d (64×N, f32) += A·B: A 64×16 bf16 in registers (mma.sync m16n8k16 A fragments, a warp's 16 rows each), B 16×N
// MN-major in shared memory (V: dims contiguous); N = 64 or 128, the head dim.
__device__ __forceinline__ void wgmmaValues(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : FERRUM_WGMMA_N64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}
__device__ __forceinline__ void wgmmaValues(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : FERRUM_WGMMA_N128(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
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

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: (numHeads / kHeads, numTiles, numSplits); warpgroup h of block (x, y, z) serves head kHeads·x + h on
// tile numTiles - 1 - y.
// Two stages leave room (shared memory, registers) for two blocks a multiprocessor; four, for one.
template <int D, int kHeads, int kStages>
__global__ void __launch_bounds__(kHeads * kThreads, kStages == 2 ? 2 : 1)
    prefillAttentionWgmmaKernel(PrefillAttentionArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = SwizzledTile<D>;
  constexpr int kBlockThreads = kHeads * kThreads;
  extern __shared__ unsigned char smemRaw[];
  __shared__ int ring[kStages][kKeys];  // slot indices of the gathers to issue: step i's in ring[i % kStages]
  // Warpgroup h's Q at qTiles + h · kBytes; then buffer b (step i's: i % kStages): K at kvTiles + 2b · kBytes, V
  // kBytes after it.
  const uint32_t qTiles = (sharedAddress(smemRaw) + kAtomBytes - 1) & ~(kAtomBytes - 1);
  const uint32_t kvTiles = qTiles + kHeads * Tile::kBytes;
  beginDependentWork();

  const prefill::TileWork w = prefill::tileWork(a, a.numTiles - 1 - static_cast<int>(blockIdx.y));
  const int group = threadIdx.x / kThreads;  // this thread's warpgroup
  const int t = threadIdx.x % kThreads;      // and its index in it
  const int head = blockIdx.x * kHeads + group;
  const int kvHead = blockIdx.x * kHeads / (a.numHeads / a.numKvHeads);
  const unsigned kvDim = static_cast<unsigned>(a.numKvHeads) * D;
  const int chunk = t % (D / 8);  // the same for threadIdx.x: kThreads is a multiple of D / 8
  const uint32_t qTile = qTiles + group * Tile::kBytes;
  const size_t qRowStride = a.qRowStride;
  copyRows<D, kThreads>(qTile, a.q + static_cast<size_t>(w.firstRow) * qRowStride + head * D + chunk * 8,
                        w.numRows, t, [&](int row) { return row * qRowStride; });
  commitAsync();

  const int begin = w.begin, end = w.end;
  if (threadIdx.x < kKeys) {
#pragma unroll
    for (int b = 0; b < kStages; b++) {
      const int i = begin + b * kKeys + threadIdx.x;
      ring[b][threadIdx.x] = i < end ? w.slots[i] : 0;
    }
  }
  __syncthreads();
  const bf16* kSrc = a.kCache + kvHead * D + chunk * 8;
  const bf16* vSrc = a.vCache + kvHead * D + chunk * 8;
  // One commit group per step, empty past the range's end so that every step waits on the same count: K and V of
  // the kKeys entries from `from` into buffer b, by the whole block; per key only the slot's offset (one
  // 32×32→64-bit multiply) is computed.
  auto gatherStep = [&](int from, int b) {
    if (from < end) {
      const int* slots = ring[b];
      const auto slotOffset = [&](int key) { return static_cast<size_t>(static_cast<unsigned>(slots[key])) * kvDim; };
      const uint32_t k = kvTiles + 2 * b * Tile::kBytes;
      const int valid = min(kKeys, end - from);
      copyRows<D, kBlockThreads>(k, kSrc, valid, threadIdx.x, slotOffset);
      copyRows<D, kBlockThreads>(k + Tile::kBytes, vSrc, valid, threadIdx.x, slotOffset);
    }
    commitAsync();
  };
#pragma unroll
  for (int b = 0; b < kStages - 1; b++) gatherStep(begin + b * kKeys, b);

  const int warp = t >> 5;
  const int row0 = warp * 16 + ((t & 31) >> 2);  // this thread's two rows in the tile: row0, row0 + 8
  const int limit0 = w.kvLenFirst + row0;
  const int limit1 = limit0 + 8;
  const float scaleLog2 = a.scale * prefill::kLog2e;
  float o[D / 8][4];
  float p[kKeys / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
#pragma unroll
  for (int n = 0; n < kKeys / 8; n++) p[n][0] = p[n][1] = p[n][2] = p[n][3] = 0.f;
  prefill::RowStats st;

  for (int base = begin, buf = 0; base < end; base += kKeys, buf = buf + 1 == kStages ? 0 : buf + 1) {
    // The slot of step i + kStages for this thread: read now, stored after this step's products.
    const int aheadIndex = base + kStages * kKeys + threadIdx.x;
    const int ahead = threadIdx.x < kKeys && aheadIndex < end ? w.slots[aheadIndex] : 0;
    waitAsync<kStages - 2>();  // this step's K and V (and Q, on the first step) are in
    fenceAsyncProxy();         // and visible to wgmma's reads
    __syncthreads();  // for every thread's copies; the buffer gathered next was last read by the previous step
    gatherStep(base + (kStages - 1) * kKeys, buf == 0 ? kStages - 1 : buf - 1);
    const uint32_t kTile = kvTiles + 2 * buf * Tile::kBytes;
    const uint32_t vTile = kTile + Tile::kBytes;

    wgmmaFence();
#pragma unroll
    for (int s = 0; s < D / 16; s++) {
      wgmmaScores(p, descriptor(qTile + Tile::stepOffset(s), 16), descriptor(kTile + Tile::stepOffset(s), 16), s > 0);
    }
    wgmmaCommit();
    wgmmaWaitAll();
    holdRegisters(p);
    // Masking is needed where the step reaches the warp's first row's limit.
    prefill::softmaxStep(p, o, st, base, limit0, limit1, base + kKeys > w.kvLenFirst + warp * 16, scaleLog2);

    // O += P·V: k-step j covers keys 16j .. 16j + 15, 16 rows (2,048 bytes) of the V tile.
    uint32_t hi[kKeys / 16][4], lo[kKeys / 16][4];
#pragma unroll
    for (int j = 0; j < kKeys / 16; j++) prefill::packP(p, j, hi[j], lo[j]);
    wgmmaFence();
#pragma unroll
    for (int j = 0; j < kKeys / 16; j++) {
      const uint64_t v = descriptor(vTile + j * 16 * 128, Tile::kPanelBytes);
      wgmmaValues(o, hi[j], v);
      wgmmaValues(o, lo[j], v);
    }
    wgmmaCommit();
    wgmmaWaitAll();
    holdRegisters(o);
    holdRegisters(hi);
    holdRegisters(lo);
    // ring[buf] fed this step's gather, issued kStages - 1 steps ago: free for step i + kStages.
    if (threadIdx.x < kKeys) ring[buf][threadIdx.x] = ahead;
  }
  waitAsync<0>();  // the gathers past the range's end are empty, and an empty split still copied Q
  prefill::storeRows<D>(a, w, head, row0, o, st);
#else
  __trap();  // launched only where prefillWgmmaAvailable holds, which needs this kernel built for sm_90a
#endif
}

template <int D, int kHeads, int kStages>
void launchWith(const PrefillAttentionArgs& a, cudaStream_t stream) {
  // Alignment slack, Q, kStages × (K, V).
  constexpr size_t bytes = kAtomBytes + (kHeads + 2 * kStages) * SwizzledTile<D>::kBytes;
  static const cudaError_t optIn = cudaFuncSetAttribute(prefillAttentionWgmmaKernel<D, kHeads, kStages>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  checkCuda(optIn, "prefillAttentionWgmmaKernel shared memory");
  launchKernel("prefillAttentionWgmmaKernel", prefillAttentionWgmmaKernel<D, kHeads, kStages>,
               dim3(a.numHeads / kHeads, a.numTiles, a.numSplits), kHeads * kThreads, bytes, stream, a);
}

// Two heads a block where the group (query heads a kv head) is even; 4 stages where the grid fits the
// multiprocessors one block each (2 stages fit two blocks a multiprocessor).
template <int D, int kHeads>
void launchStages(const PrefillAttentionArgs& a, cudaStream_t stream) {
  const long blocks = static_cast<long>(a.numHeads / kHeads) * a.numTiles * a.numSplits;
  if (blocks <= a.numSms) return launchWith<D, kHeads, 4>(a, stream);
  launchWith<D, kHeads, 2>(a, stream);
}

template <int D>
void launchFor(const PrefillAttentionArgs& a, cudaStream_t stream) {
  if ((a.numHeads / a.numKvHeads) % 2 == 0) return launchStages<D, 2>(a, stream);
  launchStages<D, 1>(a, stream);
}

}  // namespace

bool prefillWgmmaAvailable(int device) {
  const char* setting = std::getenv("FERRUM_CUDA_WGMMA");
  if (setting != nullptr && std::string(setting) == "0") return false;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  return major == 9 && std::string(" " FERRUM_CUDA_ARCHS).find(" 90a") != std::string::npos;
}

bool prefillWgmmaSupportsHeadDim(int headDim) { return headDim == 64 || headDim == 128; }

void launchPrefillAttentionWgmma(const PrefillAttentionArgs& args, cudaStream_t stream) {
  switch (args.headDim) {
    case 64: return launchFor<64>(args, stream);
    case 128: return launchFor<128>(args, stream);
    default:
      throw NativeError("internal", "prefill attention (wgmma): unsupported head dim " + std::to_string(args.headDim));
  }
}

}  // namespace ferrum
