// Prefill attention on wgmma for grids of at most two blocks a multiprocessor's worth (prefill of up to ~1,000
// tokens, a chunk over a cached prefix cut into kv splits): one block a multiprocessor, whose warps specialize.
//   - A producer warp gathers each step's K and V (64 entries, by slot) with cp.async into one of kStages buffers,
//     up to kStages steps ahead; each lane's copies arrive on the buffer's `full` mbarrier as they land.
//   - Each consumer warpgroup (one a head, as in attention-prefill-wgmma.cu) waits on `full`, runs the step
//     (attention-prefill-wgmma.cuh) and arrives on the buffer's `empty` mbarrier, which the producer waits on before
//     it refills the buffer.
// Why: the two-blocks-a-multiprocessor kernel ends every step with a block-wide barrier (for its own gathers), so
// both warpgroups run their softmax, and then their products, at the same time. Here neither waits on the other,
// and the gathers' issue leaves the consumers. On the H100 (Qwen3-4B shape, 2 layers under Nsight Compute, hi + lo
// P) a layer's attention read 15.9 against 16.9 µs for 64 new tokens over 2,064 cached, 21.9 against 23.3 for a
// 512-token prompt, 42.3 against 50.7 for 1,024; it lost from ~1,500 tokens (85.8 against 79.7), where the other
// kernel keeps four warpgroups a multiprocessor busy (bench/results/cuda-attention-producer-2026-11-22-pass16.md).
// cp.async writes through the generic proxy and wgmma reads through the async one: a consumer fences the proxies
// after its wait on `full`, as the other kernel does after its barrier.
#include <cstdint>

#include "attention-prefill-wgmma.cuh"
#include "attention-prefill.h"

namespace ferrum {
namespace {

using prefill::kKeys;
using prefill::kThreads;
using wgmma::SwizzledTile;
constexpr int kStages = 4;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void barrierInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void barrierArrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives, without raising the count the phase expects, once this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void barrierArriveOnCopies(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Until the phase of this parity has completed.
__device__ __forceinline__ void barrierWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwaiting:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra waiting;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Among `threads` threads of the block (a warpgroup), on hardware barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void groupSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The producer warp's gather of kKeys entries (`valid` of them real, the rest zero-filled, so that masked P·V never
// reads pool garbage) into the K tile at kTile and the V tile after it. kSrc / vSrc point at this lane's 16-byte
// chunk of slot 0; slotLo / slotHi hold the slots of the step's entries lane and 32 + lane, shuffled to the lanes
// that copy them (a warp copies kChunks chunks of each of 32 / kChunks entries a pass).
template <int D>
__device__ __forceinline__ void gatherStep(uint32_t kTile, const bf16* kSrc, const bf16* vSrc, unsigned kvDim,
                                           int valid, int slotLo, int slotHi, int lane) {
  using Tile = SwizzledTile<D>;
  constexpr int kChunks = D / 8;
  constexpr int kKeysPerPass = 32 / kChunks;
  const int chunk = lane % kChunks;
#pragma unroll
  for (int j = 0; j < kKeys / kKeysPerPass; j++) {
    const int key = j * kKeysPerPass + lane / kChunks;
    const int slot = __shfl_sync(0xffffffffu, j * kKeysPerPass < 32 ? slotLo : slotHi, key % 32);
    const bool ok = key < valid;
    const size_t at = ok ? static_cast<size_t>(static_cast<unsigned>(slot)) * kvDim : 0;
    const uint32_t dst = kTile + Tile::offset(key, chunk);
    copyAsync16(dst, kSrc + at, ok ? 16 : 0);
    copyAsync16(dst + Tile::kBytes, vSrc + at, ok ? 16 : 0);
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: (numHeads / kHeads, numTiles, numSplits); warpgroup h of block (x, y, z) serves head kHeads·x + h on tile
// numTiles - 1 - y (longest first); the last warp is the producer.
template <int D, int kHeads>
__global__ void __launch_bounds__(kHeads * kThreads + 32, 1) prefillAttentionProducerKernel(PrefillAttentionArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = SwizzledTile<D>;
  extern __shared__ unsigned char smemRaw[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  // Warpgroup h's Q at qTiles + h · kBytes; then buffer b (step i's: i % kStages): K at kvTiles + 2b · kBytes, V
  // kBytes after it.
  const uint32_t qTiles = (sharedAddress(smemRaw) + wgmma::kAtomBytes - 1) & ~(wgmma::kAtomBytes - 1);
  const uint32_t kvTiles = qTiles + kHeads * Tile::kBytes;
  const auto fullBar = [&](int b) { return sharedAddress(&full[b]); };
  const auto emptyBar = [&](int b) { return sharedAddress(&empty[b]); };
  if (threadIdx.x == 0) {
    for (int b = 0; b < kStages; b++) {
      barrierInit(fullBar(b), 32);                          // the producer's lanes
      barrierInit(emptyBar(b), kHeads * prefill::kWarps);  // lane 0 of each consumer warp
    }
  }
  __syncthreads();
  beginDependentWork();

  const prefill::TileWork w = prefill::tileWork(a, a.numTiles - 1 - static_cast<int>(blockIdx.y));
  const int kvHead = blockIdx.x * kHeads / (a.numHeads / a.numKvHeads);
  const int begin = w.begin, end = w.end;
  const int numSteps = begin < end ? (end - begin + kKeys - 1) / kKeys : 0;  // an empty split stores its partial

  if (threadIdx.x >= kHeads * kThreads) {
    const int lane = threadIdx.x & 31;
    const int chunk = lane % (D / 8);
    const bf16* kSrc = a.kCache + kvHead * D + chunk * 8;
    const bf16* vSrc = a.vCache + kvHead * D + chunk * 8;
    const unsigned kvDim = static_cast<unsigned>(a.numKvHeads) * D;
    const auto slotAt = [&](int i) { return i < end ? w.slots[i] : 0; };
    int slotLo = slotAt(begin + lane), slotHi = slotAt(begin + 32 + lane);
    for (int s = 0; s < numSteps; s++) {
      const int from = begin + s * kKeys, b = s % kStages;
      const int nextLo = slotAt(from + kKeys + lane), nextHi = slotAt(from + kKeys + 32 + lane);
      if (s >= kStages) barrierWait(emptyBar(b), (s / kStages + 1) & 1);  // step s - kStages is done with b
      gatherStep<D>(kvTiles + 2 * b * Tile::kBytes, kSrc, vSrc, kvDim, min(kKeys, end - from), slotLo, slotHi, lane);
      barrierArriveOnCopies(fullBar(b));
      slotLo = nextLo;
      slotHi = nextHi;
    }
    waitAsync<0>();  // no copy outlives its warp
    return;
  }

  const int group = threadIdx.x / kThreads;
  const int t = threadIdx.x % kThreads;
  const int head = blockIdx.x * kHeads + group;
  const uint32_t qTile = qTiles + group * Tile::kBytes;
  wgmma::copyQ<D>(qTile, a, w, head, t);
  waitAsync<0>();
  wgmma::fenceAsyncProxy();
  groupSync(1 + group, kThreads);  // the warpgroup's Q is in

  const int warp = t >> 5;
  const int row0 = warp * 16 + ((t & 31) >> 2);  // this thread's two rows in the tile: row0, row0 + 8
  const float scaleLog2 = a.scale * prefill::kLog2e;
  float o[D / 8][4], p[kKeys / 8][4];
  wgmma::zero(o);
  wgmma::zero(p);
  prefill::RowStats st;
  for (int s = 0; s < numSteps; s++) {
    const int b = s % kStages;
    barrierWait(fullBar(b), (s / kStages) & 1);
    wgmma::fenceAsyncProxy();
    const uint32_t kTile = kvTiles + 2 * b * Tile::kBytes;
    wgmma::attendStep<D>(o, p, st, qTile, kTile, kTile + Tile::kBytes, begin + s * kKeys, w.kvLenFirst + row0,
                         w.kvLenFirst + warp * 16, scaleLog2);
    if ((t & 31) == 0) barrierArrive(emptyBar(b));
  }
  prefill::storeRows<D>(a, w, head, row0, o, st);
#else
  __trap();  // launched only where prefillWgmmaAvailable holds, which needs this kernel built for sm_90a
#endif
}

constexpr char kName[] = "prefillAttentionProducerKernel";
template <int D, int kHeads>
using Producer =
    wgmma::Kernel<prefillAttentionProducerKernel<D, kHeads>, kName, D, kHeads, kHeads * kThreads + 32, kStages>;

}  // namespace

void launchPrefillAttentionProducer(const PrefillAttentionArgs& args, cudaStream_t stream) {
  wgmma::withShape<Producer>(args, [&](auto kernel) { wgmma::launch(kernel, args, stream); });
}

void preloadPrefillAttentionProducer(const PrefillAttentionArgs& args) {
  wgmma::withShape<Producer>(args, [](auto kernel) { wgmma::prepare(kernel); });
}

}  // namespace ferrum
