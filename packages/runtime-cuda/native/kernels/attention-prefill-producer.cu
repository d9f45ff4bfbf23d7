// Prefill attention on wgmma for grids of at most two blocks a multiprocessor's worth (prefill of up to ~1,000
// tokens, a chunk over a cached prefix cut into kv splits): one block a multiprocessor, whose warps specialize.
//   - A producer warp gathers each step's K and V (64 entries, by slot) with cp.async into one of kStages buffers,
//     up to kStages steps ahead; each lane's copies arrive on the buffer's `full` mbarrier as they land.
//   - Each consumer warpgroup (one a head, as in attention-prefill-wgmma.cu) waits on `full`, runs the step
//     (attention-prefill-wgmma.cuh) and arrives on the buffer's `empty` mbarrier, which the producer waits on before
//     it refills the buffer. Two warpgroups take turns on the tensor cores (FlashAttention-3's ping-pong): a turn
//     issues one step's P·V and the next step's S, and a warpgroup's softmax runs during the other's turn. On the
//     H100 (ncu, µs a layer) that read 21.5 against 22.0 for 64 new tokens over 2,064 cached, 21.0 against 21.5 for
//     a 512-token prompt and 42.0 against 42.4 for 1,024, against the same loop without the turns
//     (bench/results/cuda-ping-pong-2026-11-22-pass20.md).
// Why: the two-blocks-a-multiprocessor kernel ends every step with a block-wide barrier (for its own gathers), so
// both warpgroups run their softmax, and then their products, at the same time. Here no block-wide barrier ties
// their steps together, and the gathers' issue leaves the consumers. On the H100 (Qwen3-4B shape, 2 layers under
// Nsight Compute, hi + lo P) a layer's attention read 15.9 against 16.9 µs for 64 new tokens over 2,064 cached, 21.9
// against 23.3 for a 512-token prompt, 42.3 against 50.7 for 1,024; it lost from ~1,500 tokens (85.8 against 79.7),
// where the other kernel keeps four warpgroups a multiprocessor busy
// (bench/results/cuda-attention-producer-2026-11-22-pass16.md).
// cp.async writes through the generic proxy and wgmma reads through the async one: a consumer fences the proxies
// after its wait on `full`, as the other kernel does after its barrier.
// A chunk over a long cached prefix cuts each tile's kv list into splits. Where a tile's splits fit one thread-block
// cluster, and all the grid's clusters fit the device at once, its blocks merge their partials through distributed
// shared memory (mergeClusterSplits) instead of writing them to global memory for prefillCombineKernel: on the
// H100, an agent turn (64 new tokens over 2,000 cached) spent ~0.33 ms a step on those partials and the combine
// (measured by leaving both out), and the cluster merge took the step from 4.79-4.80 to 4.71-4.72 ms
// (bench/results/cuda-cluster-splits-2026-11-22-pass19.md).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../env-switch.h"
#include "attention-prefill-wgmma.cuh"
#include "attention-prefill.h"
#include "cluster.cuh"
#include "mbarrier.cuh"

namespace ferrum {
namespace {

using prefill::kKeys;
using prefill::kThreads;
using wgmma::SwizzledTile;
constexpr int kStages = 4;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Hardware barriers: 1 + h for warpgroup h's Q (and its staged output), 1 + kHeads for both warpgroups before the
// cluster exchange, and kTurnBarrier + h for warpgroup h's tensor-core turns.
constexpr int kTurnBarrier = 4;

// Among `threads` threads of the block (a warpgroup), on hardware barrier `id` (0 is __syncthreads').
__device__ __forceinline__ void groupSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Counts this warpgroup's threads towards barrier `id`'s `threads` without waiting.
__device__ __forceinline__ void groupArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
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

// Where a cluster's blocks leave their splits' partials for each other, over the Q and K/V buffers once every step
// is done: O of warpgroup h's rows at [h][row][D + 4] (the padding keeps a warp's float2 stores of 8 rows on
// distinct banks), then (m, l) at [h][row].
template <int D, int kHeads>
struct SplitExchange {
  static constexpr int kStride = D + 4;
  static constexpr uint32_t kMlOffset = kHeads * prefill::kRows * kStride * sizeof(float);
  static constexpr uint32_t kBytes = kMlOffset + kHeads * prefill::kRows * sizeof(float2);
  static_assert(kBytes <= (kHeads + 2 * kStages) * SwizzledTile<D>::kBytes, "the exchange fits the buffers");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// A consumer thread's two rows of O (unnormalized) and their (m, l) into this block's exchange at `exchange`.
template <int D, int kHeads>
__device__ __forceinline__ void stashRows(unsigned char* exchange, int group, int row0, const float (&o)[D / 8][4],
                                          const prefill::RowStats& st) {
  using X = SplitExchange<D, kHeads>;
  const int c = threadIdx.x & 3;
  float* rows = reinterpret_cast<float*>(exchange) + group * prefill::kRows * X::kStride;
  float2* ml = reinterpret_cast<float2*>(exchange + X::kMlOffset) + group * prefill::kRows;
#pragma unroll
  for (int half = 0; half < 2; half++) {
    const int r = row0 + 8 * half;
#pragma unroll
    for (int t = 0; t < D / 8; t++) {
      *reinterpret_cast<float2*>(rows + r * X::kStride + t * 8 + 2 * c) = make_float2(o[t][2 * half], o[t][2 * half + 1]);
    }
    if (c == 0) ml[r] = half == 0 ? make_float2(st.m0, st.l0) : make_float2(st.m1, st.l1);
  }
}

// The cluster's blocks are the tile's splits (rank = split). After every block has stashed its rows, block r merges
// rows [r·R, (r + 1)·R) of the tile (R = kRows / numSplits rounded up) for all its heads and stores them normalized,
// reading every split's partial from its block's exchange. As in prefillCombineKernel, a warp merges a (row, head):
// lane s loads split s's (m, l), and each lane D / 32 dims of every split.
template <int D, int kHeads>
__device__ __forceinline__ void mergeClusterSplits(const PrefillAttentionArgs& a, const prefill::TileWork& w,
                                                   uint32_t exchange) {
  using X = SplitExchange<D, kHeads>;
  constexpr int E = D / 32;
  const int lane = threadIdx.x & 31;
  const int splits = a.numSplits;
  const int rowsEach = (prefill::kRows + splits - 1) / splits;
  const int rowBegin = static_cast<int>(blockIdx.z) * rowsEach;
  const int pairs = (min(w.numRows, rowBegin + rowsEach) - rowBegin) * kHeads;
  const size_t outStride = static_cast<size_t>(a.numHeads) * D;
  for (int pair = threadIdx.x >> 5; pair < pairs; pair += blockDim.x >> 5) {
    const int h = pair % kHeads;
    const int r = rowBegin + pair / kHeads;
    const uint32_t mlAt = exchange + X::kMlOffset + (h * prefill::kRows + r) * sizeof(float2);
    const uint32_t valuesAt = exchange + ((h * prefill::kRows + r) * X::kStride + lane * E) * sizeof(float);
    const float2 ml = lane < splits ? cluster::load2(cluster::mapTo(mlAt, lane)) : make_float2(-INFINITY, 0.f);
    mergeSplitRow<kPrefillMaxClusterSplits, E>(
        ml, splits, true, [&](int s, float(&v)[E]) { cluster::loadFloats(cluster::mapTo(valuesAt, s), v); },
        a.out + (w.firstRow + r) * outStride + (blockIdx.x * kHeads + h) * D + lane * E);
  }
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// Grid: (numHeads / kHeads, numTiles, numSplits); warpgroup h of block (x, y, z) serves head kHeads·x + h on tile
// numTiles - 1 - y (longest first); the last warp is the producer. With kCluster, the numSplits blocks of a tile are
// one cluster and merge their splits themselves (mergeClusterSplits): no partials in global memory, no combine
// kernel after it.
template <int D, int kHeads, bool kCluster>
__global__ void __launch_bounds__(kHeads * kThreads + 32, 1) prefillAttentionProducerKernel(PrefillAttentionArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = SwizzledTile<D>;
  extern __shared__ unsigned char smemRaw[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  // Warpgroup h's Q at qTiles + h · kBytes; then buffer b (step i's: i % kStages): K at kvTiles + 2b · kBytes, V
  // kBytes after it. With kCluster, SplitExchange over them after the last step.
  const uint32_t qTiles = (sharedAddress(smemRaw) + wgmma::kAtomBytes - 1) & ~(wgmma::kAtomBytes - 1);
  const uint32_t kvTiles = qTiles + kHeads * Tile::kBytes;
  unsigned char* exchange = smemRaw + (qTiles - sharedAddress(smemRaw));
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
    if constexpr (!kCluster) return;
  } else {
    const int group = threadIdx.x / kThreads;
    const int t = threadIdx.x % kThreads;
    const int head = blockIdx.x * kHeads + group;
    const uint32_t qTile = qTiles + group * Tile::kBytes;
    wgmma::copyQ<D>(qTile, a, w, head, t);
    waitAsync<0>();
    wgmma::fenceAsyncProxy();
    groupSync(1 + group, kThreads);  // the warpgroup's Q is in

    // Turn j issues P·V of step j − 1 and S of step j (wgmma::Consumer). Two warpgroups take their turns in
    // alternation, on named barriers kTurnBarrier + group: each waits for the other's turn to be issued before it
    // issues its own, so one's softmax runs while the other's products do.
    constexpr bool kPingPong = kHeads == 2;
    wgmma::Consumer<D> c(t, a.scale);
    const auto kTileOf = [&](int s) { return kvTiles + 2 * (s % kStages) * Tile::kBytes; };
    const auto turn = [&](auto values, auto scores, int j) {
      constexpr bool kValues = decltype(values)::value, kScores = decltype(scores)::value;
      if constexpr (kPingPong) groupSync(kTurnBarrier + group, 2 * kThreads);
      if constexpr (kScores) {
        barrierWait(fullBar(j % kStages), (j / kStages) & 1);
        wgmma::fenceAsyncProxy();
      }
      c.template issueTurn<kValues, kScores>(kTileOf(j - 1) + Tile::kBytes, qTile, kTileOf(j));
      // Warpgroup 1's last turn has no turn of warpgroup 0 after it.
      if (kPingPong && (kScores || group == 0)) groupArrive(kTurnBarrier + 1 - group, 2 * kThreads);
      c.template landTurn<kValues, kScores>();
      if (kValues && (t & 31) == 0) barrierArrive(emptyBar((j - 1) % kStages));  // step j − 1 is done with it
      if constexpr (kScores) c.softmaxAndPack(begin + j * kKeys, w.kvLenFirst);
    };
    if (numSteps > 0) {
      if (kPingPong && group == 1) groupArrive(kTurnBarrier, 2 * kThreads);  // warpgroup 0 goes first
      turn(std::false_type{}, std::true_type{}, 0);
      for (int j = 1; j < numSteps; j++) turn(std::true_type{}, std::true_type{}, j);
      turn(std::true_type{}, std::false_type{}, numSteps);
    }
    if constexpr (kCluster) {
      groupSync(1 + kHeads, kHeads * kThreads);  // both warpgroups are done with the buffers the exchange covers
      stashRows<D, kHeads>(exchange, group, c.row0, c.o, c.st);
    } else {
      wgmma::storeRowsStaged<D>(a, w, head, qTile, t, c, 1 + group);
    }
  }
  if constexpr (kCluster) {
    cluster::sync();  // every block's partials are in its exchange
    mergeClusterSplits<D, kHeads>(a, w, qTiles);
    cluster::sync();  // no block leaves while another still reads its exchange
  }
#else
  __trap();  // launched only where prefillWgmmaAvailable holds, which needs this kernel built for sm_90a
#endif
}

constexpr char kName[] = "prefillAttentionProducerKernel";
template <int D, int kHeads>
using Producer = wgmma::Kernel<prefillAttentionProducerKernel<D, kHeads, false>, kName, D, kHeads,
                               kHeads * kThreads + 32, kStages>;
template <int D, int kHeads>
using ClusterProducer = wgmma::Kernel<prefillAttentionProducerKernel<D, kHeads, true>, kName, D, kHeads,
                                      kHeads * kThreads + 32, kStages>;

// Clusters of `splits` blocks of K the current device holds at once (launch.cuh's residentClusters).
template <typename K>
int residentClusters(K kernel, int splits) {
  wgmma::prepare(kernel);
  return ::ferrum::residentClusters<K::kernel>(dim3(1, 1, splits), K::threads, K::bytes);
}

// The splits the cluster kernel takes for `clusters` clusters: the most, up to numSplits and
// kPrefillMaxClusterSplits, whose clusters are all resident (`resident(n)`: clusters of n the device holds) and that
// give each split at most one step more than numSplits does; 0 where none does. On the H100 (Qwen3-4B shape, 64 new
// tokens over 2,000 cached) 16 clusters of 7 did not fit (15 resident) and 6 splits of 6 steps, merged in clusters,
// took an agent turn's step from 4.79-4.80 to 4.71-4.72 ms against 7 splits of 5 steps and the combine kernel.
template <typename Resident>
int clusterSplits(const PrefillAttentionArgs& args, long clusters, Resident resident) {
  const int most = prefillStepsPerSplit(args.maxKvLen, args.numSplits) + 1;
  for (int splits = std::min(args.numSplits, kPrefillMaxClusterSplits); splits > 1; splits--) {
    if (prefillStepsPerSplit(args.maxKvLen, splits) > most) return 0;
    if (clusters <= resident(splits)) return splits;
  }
  return 0;
}

}  // namespace

bool prefillClusterSplitsAvailable(int device) {
  return prefillWgmmaAvailable(device) && switchedOn("FERRUM_CUDA_CLUSTER_SPLITS");
}

bool launchPrefillAttentionProducer(const PrefillAttentionArgs& args, cudaStream_t stream) {
  bool merged = false;
  if (args.clusterSplits && args.numSplits > 1) {
    wgmma::withShape<ClusterProducer>(args, [&](auto kernel) {
      using K = decltype(kernel);
      const long clusters = static_cast<long>(args.numHeads / K::heads) * args.numTiles;
      const int splits = clusterSplits(args, clusters, [&](int n) { return residentClusters(kernel, n); });
      if (splits == 0) return;
      PrefillAttentionArgs clustered = args;
      clustered.numSplits = splits;
      wgmma::prepare(kernel);
      launchKernelInClusters(K::name, K::kernel, dim3(args.numHeads / K::heads, args.numTiles, splits),
                             dim3(1, 1, splits), K::threads, K::bytes, stream, clustered);
      merged = true;
    });
  }
  if (!merged) wgmma::withShape<Producer>(args, [&](auto kernel) { wgmma::launch(kernel, args, stream); });
  return merged;
}

void preloadPrefillAttentionProducer(const PrefillAttentionArgs& args) {
  wgmma::withShape<Producer>(args, [](auto kernel) { wgmma::prepare(kernel); });
  if (!args.clusterSplits) return;
  wgmma::withShape<ClusterProducer>(args, [](auto kernel) {
    for (int splits = 2; splits <= kPrefillMaxClusterSplits; splits++) residentClusters(kernel, splits);
  });
}

}  // namespace ferrum
