// Prefill attention on Hopper's warpgroup MMA (wgmma, sm_90a): the tiles, splits, softmax and output of the
// mma.sync kernel (attention-prefill.cu, attention-prefill-tile.cuh), with each step's two products issued by each
// of the block's warpgroups (one a head) as a handful of asynchronous instructions (attention-prefill-wgmma.cuh).
// Why: on the H100 the mma.sync kernel issued ~1,040 instructions a warp per 64-key step, 192 of them MMAs, and
// with two blocks a multiprocessor it stalled on their dependencies (ldmatrix → mma chains) at ~0.3 instructions
// a cycle per scheduler; most of that stream goes away here.
// A block serves the same tile for two query heads of one kv head where the group allows (one warpgroup each):
// K and V are gathered into shared memory once for both, which halves the traffic from L2 (a one-head block pulls
// its kv head's whole range for one head; on the H100 two heads a block took a 2,048-token prefill's attention
// from 850 to 510 µs for 4 layers). Blocks are ordered longest tile first
// (a sequence's later tiles see more of the causal range), so the longest ones do not start last.
// Two kernels share this: grids of up to two blocks a multiprocessor's worth run attention-prefill-producer.cu's
// (one block a multiprocessor, a producer warp gathering 4 steps ahead); larger grids run the one here, two blocks a
// multiprocessor, whose whole block gathers K and V with cp.async one step ahead (double buffering) and meets at a
// barrier each step.
// Launched only where prefillWgmmaAvailable says so; other builds and devices run the mma.sync kernel.
#include <cstdint>

#include "../env-switch.h"
#include "attention-prefill-wgmma.cuh"
#include "attention-prefill.h"

namespace ferrum {
namespace {

using prefill::kKeys;
using prefill::kThreads;
using wgmma::SwizzledTile;
constexpr int kStages = 2;

// Grid: (numHeads / kHeads, numTiles, numSplits); warpgroup h of block (x, y, z) serves head kHeads·x + h on
// tile numTiles - 1 - y.
template <int D, int kHeads>
__global__ void __launch_bounds__(kHeads * kThreads, 2) prefillAttentionWgmmaKernel(PrefillAttentionArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = SwizzledTile<D>;
  constexpr int kBlockThreads = kHeads * kThreads;
  extern __shared__ unsigned char smemRaw[];
  __shared__ int ring[kStages][kKeys];  // slot indices of the gathers to issue: step i's in ring[i % kStages]
  // Warpgroup h's Q at qTiles + h · kBytes; then buffer b (step i's: i % kStages): K at kvTiles + 2b · kBytes, V
  // kBytes after it.
  const uint32_t qTiles = (sharedAddress(smemRaw) + wgmma::kAtomBytes - 1) & ~(wgmma::kAtomBytes - 1);
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
  wgmma::copyQ<D>(qTile, a, w, head, t);

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
      wgmma::copyRows<D, kBlockThreads>(k, kSrc, valid, threadIdx.x, slotOffset);
      wgmma::copyRows<D, kBlockThreads>(k + Tile::kBytes, vSrc, valid, threadIdx.x, slotOffset);
    }
    commitAsync();
  };
  gatherStep(begin, 0);

  wgmma::Consumer<D> c(t, a.scale);

  for (int base = begin, buf = 0; base < end; base += kKeys, buf ^= 1) {
    // The slot of step i + kStages for this thread: read now, stored after this step's products.
    const int aheadIndex = base + kStages * kKeys + threadIdx.x;
    const int ahead = threadIdx.x < kKeys && aheadIndex < end ? w.slots[aheadIndex] : 0;
    waitAsync<0>();             // this step's K and V (and Q, on the first step) are in
    wgmma::fenceAsyncProxy();  // and visible to wgmma's reads
    __syncthreads();  // for every thread's copies; the buffer gathered next was last read by the previous step
    gatherStep(base + kKeys, buf ^ 1);
    const uint32_t kTile = kvTiles + 2 * buf * Tile::kBytes;
    c.attend(qTile, kTile, kTile + Tile::kBytes, base, w.kvLenFirst);
    // ring[buf] fed this step's gather, issued a step ago: free for step i + kStages.
    if (threadIdx.x < kKeys) ring[buf][threadIdx.x] = ahead;
  }
  waitAsync<0>();  // the gathers past the range's end are empty, and an empty split still copied Q
  wgmma::storeRowsStaged<D>(a, w, head, qTile, t, c, 1 + group);  // named barriers 1, 2: one a warpgroup
#else
  __trap();  // launched only where prefillWgmmaAvailable holds, which needs this kernel built for sm_90a
#endif
}

constexpr char kName[] = "prefillAttentionWgmmaKernel";
template <int D, int kHeads>
using SharedGather =
    wgmma::Kernel<prefillAttentionWgmmaKernel<D, kHeads>, kName, D, kHeads, kHeads * kThreads, kStages>;

}  // namespace

bool prefillWgmmaAvailable(int device) {
  return switchedOn("FERRUM_CUDA_WGMMA") && hopperKernelsBuilt(device);
}

bool prefillWgmmaSupportsHeadDim(int headDim) { return headDim == 64 || headDim == 128; }

int prefillWgmmaHeadsPerBlock(const PrefillAttentionArgs& a) { return (a.numHeads / a.numKvHeads) % 2 == 0 ? 2 : 1; }

void preloadPrefillAttentionWgmma(const PrefillAttentionArgs& args) {
  preloadPrefillAttentionProducer(args);
  wgmma::withShape<SharedGather>(args, [](auto kernel) { wgmma::prepare(kernel); });
}

bool launchPrefillAttentionWgmma(const PrefillAttentionArgs& args, cudaStream_t stream) {
  const long heads = args.numHeads / prefillWgmmaHeadsPerBlock(args);
  const long blocks = heads * args.numTiles * args.numSplits;
  if (blocks <= 2L * args.numSms) return launchPrefillAttentionProducer(args, stream);
  wgmma::withShape<SharedGather>(args, [&](auto kernel) { wgmma::launch(kernel, args, stream); });
  return false;
}

}  // namespace ferrum
