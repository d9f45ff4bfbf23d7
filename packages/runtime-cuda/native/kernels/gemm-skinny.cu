// y[M,N] = x[M,K] · w[N,K]ᵀ for 3..64 rows on tensor cores, built for weight bandwidth.
// Orientation: mma.sync m16n8k16 with the weights as the 16-row A operand (16 outputs n × 16 k: w's row-major
// [N][K] is exactly the row-major A tile) and x as the B operand (16 k × 8 rows m: x's row-major [M][K] is the
// column-major B tile). One MMA covers 16 outputs × 8 rows; M is padded to MT = 8, 16, 32 or 64 (a template
// parameter, so registers follow M) with zero rows that are never written.
// Work: the product is cut into units of (tile of kCols = 128 outputs, chunk of kChunkK = 64 k), numbered
// tile-major, and block b of the G blocks owns units [b·U/G, (b+1)·U/G) ("stream-K"): every block streams the
// same number of weight bytes (±1 unit), G is at most one wave of resident blocks (Gemm::tune also times
// fewer), and small N still fills the GPU.
// A block pipelines its units through kStages shared-memory stages filled by cp.async (the weight chunk,
// 16 KB, and the x chunk, MT × 128 bytes, 16-byte pieces XOR-swizzled per row so ldmatrix is conflict-free);
// its 4 warps each own 32 of the tile's 128 outputs for all MT rows.
// A tile whose k range is split between blocks: each block writes its f32 partial into the workspace, bumps the
// tile's arrival counter, and the last to arrive sums every partial in block order (its own from registers),
// writes y and resets the counter. The sum order is fixed by the shape and G, so results are deterministic,
// with no reduce kernel and no atomics on y.
#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "gemm-skinny.h"
#include "tensor-core.cuh"

namespace ferrum {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kChunkK = 64;                         // k per unit: one 128-byte line of each weight row
constexpr int kTilesPerWarp = 2;                    // 16-output MMA tiles per warp
constexpr int kCols = kWarps * kTilesPerWarp * 16;  // outputs n per work tile
constexpr int kStages = 4;                          // units in shared memory: 3 loading while 1 is multiplied

template <int MT>
struct Layout {
  static constexpr int kWElems = kCols * kChunkK;  // one stage of weights, [kCols][kChunkK]
  static constexpr int kXElems = MT * kChunkK;     // one stage of x, [MT][kChunkK]
  static constexpr size_t kSmemBytes = static_cast<size_t>(kStages) * (kWElems + kXElems) * sizeof(bf16);
  static constexpr int kPartialFloats = MT * kCols;  // one partial tile
};

struct SkinnyArgs {
  const bf16* x;
  const bf16* w;
  void* y;
  int m, n, k;
  unsigned* counters;  // [G], zero
  float* partials;     // [G][2][MT × kCols]: slot 0 for a block's first tile, 1 for its last
};

// The partition of U units among G ≤ U blocks (each gets at least one).
struct Units {
  long long total;
  int chunks;  // units per tile
  int grid;
  __device__ long long start(int block) const { return static_cast<long long>(block) * total / grid; }
  /** The block whose range holds unit u: the last b with start(b) ≤ u. */
  __device__ int owner(long long u) const { return static_cast<int>(((u + 1) * grid - 1) / total); }
  /** Partial slot of `block` for `tile`: 0 when it is the block's first tile, else 1 (its last). */
  __device__ int slot(int block, int tile) const { return tile == start(block) / chunks ? 0 : 1; }
};

// Element offset of 16-byte piece `piece` (of 8) in row `row` of a [rows][kChunkK] stage.
__device__ __forceinline__ int swizzled(int row, int piece) { return row * kChunkK + ((piece ^ (row & 7)) << 3); }

// One unit into `stage`: kCols weight rows and MT x rows, kChunkK elements each. Rows past n or m and k past
// the end are zero-filled, so they add nothing.
template <int MT>
__device__ __forceinline__ void loadUnit(const SkinnyArgs& a, bf16* wStage, bf16* xStage, int tile, int k0) {
  const int piece = threadIdx.x & 7;  // the same piece of every row this thread copies
  const int kk = k0 + piece * 8;
  const bool kOk = kk < a.k;
#pragma unroll
  for (int j = 0; j < kCols * 8 / kThreads; j++) {
    const int row = (threadIdx.x >> 3) + j * (kThreads / 8);
    const int n = tile * kCols + row;
    const bool ok = kOk && n < a.n;
    copyAsync16(wStage + swizzled(row, piece), a.w + (ok ? static_cast<size_t>(n) * a.k + kk : 0), ok ? 16 : 0);
  }
#pragma unroll
  for (int j = 0; j < (MT * 8 + kThreads - 1) / kThreads; j++) {
    const int row = (threadIdx.x >> 3) + j * (kThreads / 8);
    if (row >= MT) break;
    const bool ok = kOk && row < a.m;
    copyAsync16(xStage + swizzled(row, piece), a.x + (ok ? static_cast<size_t>(row) * a.k + kk : 0), ok ? 16 : 0);
  }
}

// acc[t][mt] += the warp's 16-output tile t × x rows 8mt..8mt+7 over the stage's kChunkK.
template <int MT>
__device__ __forceinline__ void multiplyUnit(const bf16* wStage, const bf16* xStage, int warp, int lane,
                                             float (&acc)[kTilesPerWarp][MT / 8][4]) {
#pragma unroll
  for (int step = 0; step < kChunkK / 16; step += 2) {
    uint32_t b[MT / 8][4];  // B fragments of k-steps `step` (b[.][0..1]) and `step + 1` (b[.][2..3])
#pragma unroll
    for (int mt = 0; mt < MT / 8; mt++) {
      loadMatrixX4(b[mt], xStage + swizzled(mt * 8 + (lane & 7), 2 * step + (lane >> 3)));
    }
#pragma unroll
    for (int half = 0; half < 2; half++) {
#pragma unroll
      for (int t = 0; t < kTilesPerWarp; t++) {
        uint32_t a[4];
        const int row = (warp * kTilesPerWarp + t) * 16 + (lane & 15);
        loadMatrixX4(a, wStage + swizzled(row, 2 * (step + half) + (lane >> 4)));
#pragma unroll
        for (int mt = 0; mt < MT / 8; mt++) mma16816(acc[t][mt], a, b[mt][2 * half], b[mt][2 * half + 1]);
      }
    }
  }
}

// Accumulator element e of fragment (t, mt) is y[row][col] with row = 8mt + 2(lane & 3) + (e & 1) and
// col = warp's first output + 16t + lane / 4 + 8(e >> 1).
template <int MT, typename Out>
__device__ __forceinline__ void storeTile(const SkinnyArgs& a, int tile, int warp, int lane,
                                          const float (&v)[kTilesPerWarp][MT / 8][4]) {
  Out* y = static_cast<Out*>(a.y);
  const int col0 = tile * kCols + warp * kTilesPerWarp * 16 + (lane >> 2);
  const int row0 = 2 * (lane & 3);
#pragma unroll
  for (int t = 0; t < kTilesPerWarp; t++) {
#pragma unroll
    for (int mt = 0; mt < MT / 8; mt++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int row = row0 + mt * 8 + (e & 1);
        const int col = col0 + t * 16 + (e >> 1) * 8;
        if (row >= a.m || col >= a.n) continue;
        if constexpr (std::is_same_v<Out, float>) {
          y[static_cast<size_t>(row) * a.n + col] = v[t][mt][e];
        } else {
          y[static_cast<size_t>(row) * a.n + col] = __float2bfloat16(v[t][mt][e]);  // round to nearest even
        }
      }
    }
  }
}

// This thread's float4 of fragment (t, mt) in a partial tile: each thread reads back exactly what it wrote.
__device__ __forceinline__ int partialIndex(int warp, int lane, int t, int mt, int mTiles) {
  return ((warp * kTilesPerWarp + t) * mTiles + mt) * 32 + lane;
}

// A tile whose k range blocks first..last share: this block's partial goes to its slot, and the last block to
// arrive adds all of them in block order and writes y. Called by the whole block.
template <int MT, typename Out>
__device__ __forceinline__ void finishSplitTile(const SkinnyArgs& a, const Units& units, int tile, int first, int last,
                                                int slot, int warp, int lane,
                                                const float (&acc)[kTilesPerWarp][MT / 8][4], int& lastToArrive) {
  constexpr int kMTiles = MT / 8;
  constexpr int kPartialFloats = Layout<MT>::kPartialFloats;
  // Partials read at once: up to 16 float4 loads in flight a thread rather than one contributor's at a time.
  constexpr int kBatch = kTilesPerWarp * kMTiles >= 16 ? 1 : 16 / (kTilesPerWarp * kMTiles);
  const int block = blockIdx.x;
  const int mTiles = (a.m + 7) / 8;  // fragments past m hold zeros that are never written: skip them
  float4* mine = reinterpret_cast<float4*>(a.partials + (static_cast<size_t>(block) * 2 + slot) * kPartialFloats);
#pragma unroll
  for (int t = 0; t < kTilesPerWarp; t++) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; mt++) {
      if (mt >= mTiles) break;
      __stcg(mine + partialIndex(warp, lane, t, mt, kMTiles),
             make_float4(acc[t][mt][0], acc[t][mt][1], acc[t][mt][2], acc[t][mt][3]));
    }
  }
  __threadfence();  // the partial is visible device-wide before the arrival below
  __syncthreads();
  if (threadIdx.x == 0) {
    lastToArrive = atomicAdd(a.counters + first, 1u) == static_cast<unsigned>(last - first);
    if (lastToArrive) a.counters[first] = 0;  // every contributor has arrived: ready for the next launch
  }
  __syncthreads();
  if (!lastToArrive) return;
  __threadfence();
  float sum[kTilesPerWarp][kMTiles][4] = {};
  for (int from0 = first; from0 <= last; from0 += kBatch) {
    float4 p[kBatch][kTilesPerWarp][kMTiles];
#pragma unroll
    for (int j = 0; j < kBatch; j++) {
      const int from = from0 + j;
      if (from > last) break;
      // Its own partial from registers: the same values, so the sum is the same whoever comes last.
      const float4* part = reinterpret_cast<const float4*>(
          a.partials + (static_cast<size_t>(from) * 2 + units.slot(from, tile)) * kPartialFloats);
#pragma unroll
      for (int t = 0; t < kTilesPerWarp; t++) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; mt++) {
          if (mt >= mTiles) break;
          p[j][t][mt] = from == block ? make_float4(acc[t][mt][0], acc[t][mt][1], acc[t][mt][2], acc[t][mt][3])
                                      : __ldcg(part + partialIndex(warp, lane, t, mt, kMTiles));
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; j++) {
      if (from0 + j > last) break;
#pragma unroll
      for (int t = 0; t < kTilesPerWarp; t++) {
#pragma unroll
        for (int mt = 0; mt < kMTiles; mt++) {
          if (mt >= mTiles) break;
          sum[t][mt][0] += p[j][t][mt].x;
          sum[t][mt][1] += p[j][t][mt].y;
          sum[t][mt][2] += p[j][t][mt].z;
          sum[t][mt][3] += p[j][t][mt].w;
        }
      }
    }
  }
  storeTile<MT, Out>(a, tile, warp, lane, sum);
}

template <int MT, typename Out>
__global__ void __launch_bounds__(kThreads) skinnyGemmKernel(SkinnyArgs a) {
  using L = Layout<MT>;
  constexpr int kMTiles = MT / 8;
  extern __shared__ __align__(128) unsigned char smemRaw[];
  bf16* wStages = reinterpret_cast<bf16*>(smemRaw);
  bf16* xStages = wStages + kStages * L::kWElems;
  __shared__ int lastToArrive;

  const int chunks = (a.k + kChunkK - 1) / kChunkK;
  const Units units{static_cast<long long>((a.n + kCols - 1) / kCols) * chunks, chunks, static_cast<int>(gridDim.x)};
  const int block = blockIdx.x;
  const long long begin = units.start(block);
  const int count = static_cast<int>(units.start(block + 1) - begin);
  const int firstTile = static_cast<int>(begin / chunks);
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  auto load = [&](int i) {  // unit begin + i into stage i % kStages
    const long long u = begin + i;
    const int stage = i % kStages;
    loadUnit<MT>(a, wStages + stage * L::kWElems, xStages + stage * L::kXElems, static_cast<int>(u / chunks),
                 static_cast<int>(u % chunks) * kChunkK);
  };

  float acc[kTilesPerWarp][kMTiles][4] = {};
#pragma unroll
  for (int i = 0; i < kStages - 1; i++) {
    if (i < count) load(i);
    commitAsync();  // one group per stage, empty or not, so the wait below counts stages
  }
  for (int i = 0; i < count; i++) {
    waitAsync<kStages - 2>();  // unit i has landed (this thread's copies) ...
    __syncthreads();           // ... everyone's; and every warp is done with unit i - 1's stage, reloaded now
    if (i + kStages - 1 < count) load(i + kStages - 1);
    commitAsync();
    const int stage = i % kStages;
    multiplyUnit<MT>(wStages + stage * L::kWElems, xStages + stage * L::kXElems, warp, lane, acc);

    const long long u = begin + i;
    if ((u + 1) % chunks != 0 && i + 1 < count) continue;  // the tile goes on in this block
    const int tile = static_cast<int>(u / chunks);
    const int first = units.owner(static_cast<long long>(tile) * chunks);
    const int last = units.owner(static_cast<long long>(tile + 1) * chunks - 1);
    if (first == last) {
      storeTile<MT, Out>(a, tile, warp, lane, acc);
    } else {
      finishSplitTile<MT, Out>(a, units, tile, first, last, tile == firstTile ? 0 : 1, warp, lane, acc, lastToArrive);
    }
#pragma unroll
    for (int t = 0; t < kTilesPerWarp; t++) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; mt++) acc[t][mt][0] = acc[t][mt][1] = acc[t][mt][2] = acc[t][mt][3] = 0.f;
    }
  }
}

// Both output variants opted in to their shared memory, once; the blocks of the fewer-resident one per SM.
template <int MT>
int residentBlocks() {
  static const int perSm = [] {
    constexpr size_t bytes = Layout<MT>::kSmemBytes;
    int fewest = INT_MAX;
    for (auto kernel : {skinnyGemmKernel<MT, float>, skinnyGemmKernel<MT, bf16>}) {
      checkCuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
                "skinnyGemmKernel shared memory");
      int blocks = 0;
      checkCuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, bytes),
                "skinnyGemmKernel occupancy");
      fewest = std::min(fewest, blocks);
    }
    return fewest;
  }();
  return perSm;
}

int rowTile(int m) { return m <= 8 ? 8 : m <= 16 ? 16 : m <= 32 ? 32 : 64; }

int residentBlocksFor(int rows) {
  switch (rowTile(rows)) {
    case 8: return residentBlocks<8>();
    case 16: return residentBlocks<16>();
    case 32: return residentBlocks<32>();
    default: return residentBlocks<64>();
  }
}

long long unitsOf(int n, int k) {
  return static_cast<long long>((n + kCols - 1) / kCols) * ((k + kChunkK - 1) / kChunkK);
}

// At least one unit a block, a counter each, and room for two partial tiles each.
int clampBlocks(long long requested, int m, int n, int k, const SkinnyWorkspace& ws) {
  const size_t partialBytes = 2 * static_cast<size_t>(rowTile(m)) * kCols * sizeof(float);
  long long blocks = std::min({requested, unitsOf(n, k), static_cast<long long>(ws.numCounters),
                               static_cast<long long>(ws.partialBytes / partialBytes)});
  return static_cast<int>(std::max(1LL, blocks));
}

template <int MT>
void launchTile(const SkinnyArgs& args, bool outF32, int blocks, cudaStream_t stream) {
  constexpr size_t bytes = Layout<MT>::kSmemBytes;
  residentBlocks<MT>();  // the shared-memory opt-in
  if (outF32) {
    skinnyGemmKernel<MT, float><<<blocks, kThreads, bytes, stream>>>(args);
  } else {
    skinnyGemmKernel<MT, bf16><<<blocks, kThreads, bytes, stream>>>(args);
  }
}

}  // namespace

bool skinnyGemmSupports(const bf16* x, const bf16* w, int m, int k) {
  return m >= kSkinnyMinRows && m <= kSkinnyMaxRows && k > 0 && k % 8 == 0 && allAligned(16, {x, w});
}

int skinnyGemmBlocks(int m, int n, int k, int perSm, const SkinnyWorkspace& ws) {
  int fit = residentBlocksFor(m);
  if (perSm > 0) fit = std::min(fit, perSm);
  return clampBlocks(static_cast<long long>(ws.numSms) * fit, m, n, k, ws);
}

void launchSkinnyGemm(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, int blocks,
                      const SkinnyWorkspace& ws, cudaStream_t stream) {
  if (!skinnyGemmSupports(x, w, m, k)) {
    throw NativeError("internal", "skinny GEMM called outside its support: m " + std::to_string(m) + ", k " +
                                      std::to_string(k));
  }
  if (n == 0) return;
  const SkinnyArgs args{x, w, y, m, n, k, ws.counters, ws.partials};
  blocks = clampBlocks(blocks, m, n, k, ws);
  switch (rowTile(m)) {
    case 8: launchTile<8>(args, outF32, blocks, stream); break;
    case 16: launchTile<16>(args, outF32, blocks, stream); break;
    case 32: launchTile<32>(args, outF32, blocks, stream); break;
    default: launchTile<64>(args, outF32, blocks, stream); break;
  }
  FERRUM_LAUNCHED("skinnyGemmKernel");
}

}  // namespace ferrum
