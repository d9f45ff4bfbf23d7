// Prefill attention on tensor cores (flash-attention style) over the token pool. One block per (tile, query
// head); a tile is up to 64 consecutive new tokens of one sequence, so every row of it shares the kv list
// and row i of the tile sees kvLenFirst + i entries (the cached prefix plus the tile's causal triangle).
// Four warps each own 16 query rows. Per step of 64 kv entries:
//   - K and V rows are gathered from their slots into shared memory with cp.async, double-buffered: the next
//     step's gather is in flight while this one computes, and the slot indices it needs were read into
//     shared memory a step earlier still (entries past the range's end are zero-filled so masked P·V never
//     touches pool garbage);
//   - S = Q·Kᵀ with mma.sync m16n8k16 (bf16 in, f32 out), fragments loaded with ldmatrix;
//   - online softmax on S in registers (each row's four owner lanes reduce with two shuffles);
//   - P is repacked from the accumulator layout straight into the A-operand layout, and O += P·V with V
//     loaded through ldmatrix.trans. P goes in as two bf16 terms, hi = bf16(P) and lo = bf16(P - hi), so the
//     product keeps ~16 bits of P: prefill then agrees with the decode kernel (f32 P) to f32 rounding, and a
//     sequence recomputed after preemption continues as it would have.
// A tile whose kv list is long next to the work available (a short chunk over a long cached prefix) is cut
// into numSplits kv ranges, one block each; the splits write unnormalized partials that
// prefillCombineKernel merges.
// Numerics: f32 scores, softmax and accumulation; P carried as a bf16 hi + lo pair (above).
// On Hopper builds (sm_90a) head dims 64 and 128 run attention-prefill-wgmma.cu's kernel instead, with the same
// tiles, splits and numerics (attention-prefill-tile.cuh); the combine kernel here serves both.
#include <cfloat>
#include <cstdint>

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

template <int D>
struct Smem {
  static constexpr int kStride = D + 8;  // bf16 elements per row: +16 bytes keeps ldmatrix rows conflict-free
  // Q, then two buffers of K and V.
  static constexpr size_t kBytes = static_cast<size_t>(kRows + 4 * kKeys) * kStride * sizeof(bf16);
};

// Gathers kKeys K rows into k and the same entries' V rows into v from their slots; rows >= `valid` become
// zeros. kSrc and vSrc already point at this thread's 16-byte chunk of this kv head in slot 0: a thread copies
// the same chunk of every key it handles, so per key only the slot's offset (one 32×32→64-bit multiply) is
// computed, and the shared-memory offsets are constants of the unrolled loop.
template <int D>
__device__ __forceinline__ void gatherKv(bf16* k, bf16* v, const bf16* kSrc, const bf16* vSrc, const int* slots,
                                         int valid, unsigned kvDim) {
  constexpr int kChunks = D / 8;
  constexpr int kKeysPerPass = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kKeys % kKeysPerPass == 0, "a pass covers whole keys");
  const int key0 = threadIdx.x / kChunks;
  const int to0 = key0 * Smem<D>::kStride + threadIdx.x % kChunks * 8;
#pragma unroll
  for (int j = 0; j < kKeys / kKeysPerPass; j++) {
    const int key = key0 + j * kKeysPerPass;
    const bool ok = key < valid;
    const size_t from = ok ? static_cast<size_t>(static_cast<unsigned>(slots[key])) * kvDim : 0;
    const int to = to0 + j * kKeysPerPass * Smem<D>::kStride;
    copyAsync16(k + to, kSrc + from, ok ? 16 : 0);
    copyAsync16(v + to, vSrc + from, ok ? 16 : 0);
  }
}

template <int D>
__global__ void __launch_bounds__(kThreads) prefillAttentionKernel(PrefillAttentionArgs a) {
  constexpr int kStride = Smem<D>::kStride;
  constexpr int kSteps = D / 16;     // k-steps of Q·Kᵀ
  constexpr int kDimTiles = D / 8;   // n-tiles of O
  extern __shared__ __align__(16) unsigned char smemRaw[];
  bf16* qs = reinterpret_cast<bf16*>(smemRaw);
  bf16* kvBuffers = qs + kRows * kStride;  // buffer b: K at b × 2 × kKeys rows, V kKeys rows after it
  beginDependentWork();

  const prefill::TileWork w = prefill::tileWork(a, blockIdx.x);
  const int head = blockIdx.y;
  const int kvHead = head / (a.numHeads / a.numKvHeads);
  const unsigned kvDim = static_cast<unsigned>(a.numKvHeads) * D;
  // This thread's chunk of this kv head in slot 0 (gatherKv).
  const int chunkOffset = kvHead * D + threadIdx.x % (D / 8) * 8;
  const bf16* kSrc = a.kCache + chunkOffset;
  const bf16* vSrc = a.vCache + chunkOffset;
  const int begin = w.begin, end = w.end;
  const int* slots = w.slots;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;  // accumulator row within the warp's 16 (and g + 8)

  for (int i = threadIdx.x; i < kRows * (D / 8); i += kThreads) {
    const int r = i / (D / 8);
    const int chunk = i % (D / 8);
    const bool ok = r < w.numRows;
    const bf16* src = a.q + (ok ? static_cast<size_t>(w.firstRow + r) * a.qRowStride + head * D + chunk * 8 : 0);
    copyAsync16(qs + r * kStride + chunk * 8, src, ok ? 16 : 0);
  }
  commitAsync();

  const int row0 = warp * 16 + g;  // this thread's two rows in the tile: row0 and row0 + 8
  const int limit0 = w.kvLenFirst + row0;
  const int limit1 = limit0 + 8;
  const int warpLimit = w.kvLenFirst + min(warp * 16 + 15, w.numRows - 1);  // the most any row of this warp sees
  const float scaleLog2 = a.scale * prefill::kLog2e;

  uint32_t qa[kSteps][4];
  float o[kDimTiles][4];
#pragma unroll
  for (int t = 0; t < kDimTiles; t++) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
  prefill::RowStats st;

  // Slot indices of the steps whose gathers are next: step i's in ring[i & 1], like its K/V buffer.
  __shared__ int ring[2][kKeys];
  if (threadIdx.x < kKeys) {
    const int i0 = begin + threadIdx.x, i1 = i0 + kKeys;
    ring[0][threadIdx.x] = i0 < end ? slots[i0] : 0;
    ring[1][threadIdx.x] = i1 < end ? slots[i1] : 0;
  }
  __syncthreads();
  // One commit group per step: K and V of kKeys entries from `from` into buffer b.
  auto gatherStep = [&](int from, int b) {
    bf16* k = kvBuffers + b * 2 * kKeys * kStride;
    const int valid = min(kKeys, end - from);
    gatherKv<D>(k, k + kKeys * kStride, kSrc, vSrc, ring[b], valid, kvDim);
    commitAsync();
  };
  if (begin < end) {
    gatherStep(begin, 0);
    waitAsync<1>();  // Q is in; the first step may still be in flight
  } else {
    waitAsync<0>();
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kSteps; s++) {
    loadMatrixX4(qa[s], qs + (warp * 16 + (lane & 15)) * kStride + s * 16 + (lane >> 4) * 8);
  }

  for (int base = begin, buf = 0; base < end; base += kKeys, buf ^= 1) {
    // The slot of step i + 2 for this thread: read now, stored after this step's compute.
    const int aheadIndex = base + 2 * kKeys + threadIdx.x;
    const int ahead = threadIdx.x < kKeys && aheadIndex < end ? slots[aheadIndex] : 0;
    if (base + kKeys < end) {
      gatherStep(base + kKeys, buf ^ 1);
      waitAsync<1>();  // this step's group is in; the next one stays in flight
    } else {
      waitAsync<0>();
    }
    __syncthreads();
    const bf16* ks = kvBuffers + buf * 2 * kKeys * kStride;
    const bf16* vs = ks + kKeys * kStride;
    const bool active = base < warpLimit && warp * 16 < w.numRows;  // uniform across the warp
    if (active) {
      // S = Q·Kᵀ for 64 keys: 8 n-tiles of 8 keys, two per ldmatrix.x4.
      float p[kKeys / 8][4];
#pragma unroll
      for (int n = 0; n < kKeys / 8; n++) p[n][0] = p[n][1] = p[n][2] = p[n][3] = 0.f;
#pragma unroll
      for (int s = 0; s < kSteps; s++) {
#pragma unroll
        for (int n = 0; n < kKeys / 8; n += 2) {
          uint32_t b[4];
          const int key = n * 8 + (lane & 7) + ((lane >> 4) << 3);
          loadMatrixX4(b, ks + key * kStride + s * 16 + ((lane >> 3) & 1) * 8);
          mma16816(p[n], qa[s], b[0], b[1]);
          mma16816(p[n + 1], qa[s], b[2], b[3]);
        }
      }
      // Masking is needed where the step reaches the warp's first row's limit.
      prefill::softmaxStep(p, o, st, base, limit0, limit1, base + kKeys > w.kvLenFirst + warp * 16, scaleLog2);
      // O += P·V: k-step j covers keys 16j..16j+15, i.e. S n-tiles 2j and 2j+1.
#pragma unroll
      for (int j = 0; j < kKeys / 16; j++) {
        uint32_t pa[4], pl[4];
        prefill::packP(p, j, pa, pl);
        const int key = j * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int t = 0; t < kDimTiles; t += 2) {  // D is a multiple of 16: n-tiles come in pairs
          uint32_t b[4];
          loadMatrixX4Trans(b, vs + key * kStride + t * 8 + (lane >> 4) * 8);
          mma16816(o[t], pa, b[0], b[1]);
          mma16816(o[t + 1], pa, b[2], b[3]);
          mma16816(o[t], pl, b[0], b[1]);
          mma16816(o[t + 1], pl, b[2], b[3]);
        }
      }
    }
    // ring[buf] fed this step's gather, issued last iteration: free for step i + 2.
    if (threadIdx.x < kKeys) ring[buf][threadIdx.x] = ahead;
    __syncthreads();  // the next iteration's gather overwrites the other buffer, which this one read last
  }
  prefill::storeRows<D>(a, w, head, row0, o, st);
}

// Merges the splits of each (row, head) (splitWeight, mergeValues): a warp a (row, head), kCombineWarps heads a
// block; lane s holds split s's (m, l), and each lane sums E = D / 32 dims (one for D = 16). Every load is issued
// before the first is used (one latency, not one a split).
constexpr int kCombineWarps = 4;
template <int D>
__global__ void prefillCombineKernel(PrefillAttentionArgs a) {
  constexpr int E = D >= 32 ? D / 32 : 1;
  const int* tile = a.tiles + 4 * (blockIdx.x / kRows);  // the step's upload: readable before the wait
  const int r = blockIdx.x % kRows;
  const int tileRows = tile[1];
  const int firstRow = tile[0];
  const int lane = threadIdx.x & 31;
  const int head = blockIdx.y * kCombineWarps + static_cast<int>(threadIdx.x >> 5);
  beginDependentWork();
  if (r >= tileRows || head >= a.numHeads) return;  // whole warps
  const int row = firstRow + r;
  const size_t first = partialIndex(a, row, head, 0);
  const float* part = a.partial + first * D + lane * E;
  const float2 ml = lane < a.numSplits ? partialMl(a)[first + lane] : make_float2(-INFINITY, 0.f);
  mergeSplitRow<kPrefillMaxSplits, E>(
      ml, a.numSplits, lane * E < D, [&](int s, float(&v)[E]) { loadFloats(part + s * D, v); },
      a.out + static_cast<size_t>(row) * a.numHeads * D + static_cast<size_t>(head) * D + lane * E);
}

// The mma.sync kernel's shared-memory opt-in where it needs one, once; either way the kernel is loaded (see
// preloadPrefillAttention).
template <int D>
void prepare() {
  static const cudaError_t loaded = [] {
    constexpr size_t bytes = Smem<D>::kBytes;
    if (bytes <= 48 * 1024) {
      cudaFuncAttributes attributes;
      return cudaFuncGetAttributes(&attributes, prefillAttentionKernel<D>);
    }
    return cudaFuncSetAttribute(prefillAttentionKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  }();
  checkCuda(loaded, "prefillAttentionKernel load");
}

template <int D>
void preloadFor(const PrefillAttentionArgs& args) {
  if (args.wgmma && prefillWgmmaSupportsHeadDim(D)) {
    preloadPrefillAttentionWgmma(args);
  } else {
    prepare<D>();
  }
  cudaFuncAttributes attributes;
  checkCuda(cudaFuncGetAttributes(&attributes, prefillCombineKernel<D>), "prefillCombineKernel");
}

template <int D>
bool launchFor(const PrefillAttentionArgs& a, cudaStream_t stream) {
  bool merged = false;
  if (a.wgmma && prefillWgmmaSupportsHeadDim(D)) {
    merged = launchPrefillAttentionWgmma(a, stream);
  } else {
    prepare<D>();
    launchKernel("prefillAttentionKernel", prefillAttentionKernel<D>, dim3(a.numTiles, a.numHeads, a.numSplits),
                 kThreads, Smem<D>::kBytes, stream, a);
  }
  if (a.numSplits > 1 && !merged) {
    launchKernel("prefillCombineKernel", prefillCombineKernel<D>,
                 dim3(a.numTiles * kRows, (a.numHeads + kCombineWarps - 1) / kCombineWarps), 32 * kCombineWarps, 0,
                 stream, a);
  }
  return merged;
}

}  // namespace

bool prefillAttentionSupportsHeadDim(int headDim) {
  return headDim == 16 || headDim == 32 || headDim == 64 || headDim == 128;
}

void preloadPrefillAttention(const PrefillAttentionArgs& args) {
  switch (args.headDim) {
    case 16: return preloadFor<16>(args);
    case 32: return preloadFor<32>(args);
    case 64: return preloadFor<64>(args);
    case 128: return preloadFor<128>(args);
    default: return;
  }
}

bool launchPrefillAttention(const PrefillAttentionArgs& args, cudaStream_t stream) {
  if (args.numTiles == 0) return false;
  switch (args.headDim) {
    case 16: return launchFor<16>(args, stream);
    case 32: return launchFor<32>(args, stream);
    case 64: return launchFor<64>(args, stream);
    case 128: return launchFor<128>(args, stream);
    default:
      throw NativeError("internal", "prefill attention: unsupported head dim " + std::to_string(args.headDim));
  }
}

}  // namespace ferrum
