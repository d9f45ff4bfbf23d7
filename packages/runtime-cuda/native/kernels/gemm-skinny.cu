// y[M,N] = x[M,K] · w[N,K]ᵀ for 9-64 rows on Hopper: a weight stream with the arithmetic hidden behind it.
// Why not cuBLASLt: at these rows a product is a pure weight stream, and cuBLASLt's kernels take no part in
// programmatic dependent launch, so each one starts only after the kernel before it has drained. Here the first
// stages' weight loads go out before the wait on earlier kernels (weights are constant), while those still run. On
// the H100 (Qwen3-4B's four layer products, 36 layers of distinct weights, 64 rows, stand-in kernels between them)
// the sequence took 3.45 against 3.52-3.56 ms on cuBLASLt; at 32 rows 3.32 against 3.47 (.gpu-data harness,
// bench/results/cuda-skinny-gemm-2026-11-22-pass24.md).
// The block: a producer warp and one consumer warpgroup.
//   - The producer's lane 0 loads each stage by TMA: 128 weight rows × 128 k (two 64-k panels, 128-byte swizzle;
//     one panel in the layout below) and x's 64 rows × the same k (rows past M zero-filled), into one of kStages
//     buffers; each stage's bytes complete its `full` mbarrier. Weights go to L2 as evict-first, x (read by every
//     block) as evict-last.
//   - The consumer warpgroup runs wgmma m64n64k16 with the weights as A (two 64-row halves) and x as B, so the
//     tokens are the MMA's N, and releases a stage (`empty`) once the products reading it have completed.
//   - Split-K over a thread-block cluster: each block leaves its f32 partial tile in its shared memory, and after a
//     cluster barrier block r sums a slice of the tile over every block, in rank order, through distributed shared
//     memory: deterministic, with no partials in global memory. The split count depends on the shape only
//     (skinnyGemmSplits), so a row's result does not depend on how many rows the step has.
//   - Gated (SwiGLU): a block's halves are 64 gate rows and the 64 up rows that pair with them, and its outputs are
//     silu(gate) × up, rounded as launchSwiglu after a bf16 product would.
// A grid of more blocks than the device holds at one a multiprocessor (Qwen3-4B's gated gate|up: 152 column blocks
// on 132 multiprocessors) runs stages of one 64-k panel, not two, so that two blocks fit a multiprocessor and the
// whole grid streams at once instead of leaving 20 blocks to a second wave. The products' order over k is the same,
// so are the bits. H100, Qwen3-4B shape: an agent turn (64 new tokens over 2,000) 4.59-4.63 → 4.43-4.48 ms, decode
// steps at 32 rows 4.87-4.89 → 4.76-4.79 ms, at 64 level; at 16 rows one-panel stages read 4.32-4.37 against
// 4.30 ms, hence kOnePanelMinRows (bench/results/cuda-skinny-two-a-multiprocessor-2026-11-23-pass37.md).
#include <cudaTypedefs.h>

#include <algorithm>
#include <string>

#include "../cuda-check.h"
#include "../env-switch.h"
#include "../native-error.h"
#include "bf16-vec.cuh"
#include "cluster.cuh"
#include "device-math.cuh"
#include "gemm-skinny.h"
#include "launch.cuh"
#include "mbarrier.cuh"
#include "tensor-core.cuh"
#include "wgmma.cuh"

namespace ferrum {
namespace {

constexpr int kStages = 4;
constexpr int kBlockRows = 128;                // weight rows a block: two m64 halves
constexpr int kBlockK = 128;                   // the k granule of split-K ranges: two 64-k panels of 128-byte rows
constexpr int kPanelW = kBlockRows * 128;      // bytes of a stage's weight panel
constexpr int kPanelX = kSkinnyMaxRows * 128;  // bytes of a stage's x panel
// A stage of `panels` 64-k panels: two (48 KB, one block a multiprocessor) or one (24 KB, two).
constexpr int stageBytes(int panels) { return panels * (kPanelW + kPanelX); }
constexpr size_t sharedBytes(int panels) {
  return wgmma::kAtomBytes + kStages * stageBytes(panels) + 2 * kStages * sizeof(uint64_t);
}
// Rows from which a grid past one wave takes one-panel stages (at 16 rows they read slower; see above).
constexpr int kOnePanelMinRows = 17;
constexpr int kConsumerThreads = 128;
constexpr int kThreads = kConsumerThreads + 32;
constexpr int kPartialStride = kBlockRows + 4;  // floats a token's row of the partial tile (conflict-free writes)
constexpr int kMaxSplits = 8;
static_assert(kStages * stageBytes(1) >= kSkinnyMaxRows * kPartialStride * sizeof(float),
              "the partials fit the stages");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Four consecutive floats of another block's shared memory. Not volatile: its address comes from cluster::mapTo (a
// volatile asm) after the cluster barrier, which orders it, and a chunk's loads from every block may then issue
// together.
__device__ __forceinline__ float4 loadRemote4(uint32_t address) {
  float4 v;
  asm("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(address));
  return v;
}
#endif

// Grid (splits, blocks of output columns), clusters of (splits, 1, 1): a cluster's blocks are its K splits. kPanels:
// 64-k panels a stage.
template <bool kGlu, int kPanels>
__global__ void __launch_bounds__(kThreads, kPanels == 2 ? 1 : 2)
    skinnyGemmKernel(const __grid_constant__ CUtensorMap xMap, const __grid_constant__ CUtensorMap wMap, bf16* y,
                     int m, int outCols, int k) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kOutCols = kGlu ? kBlockRows / 2 : kBlockRows;  // output columns a block
  constexpr int kStageBytes = stageBytes(kPanels);
  constexpr int kStageK = 64 * kPanels;
  extern __shared__ uint8_t smemRaw[];
  const uint32_t raw = sharedAddress(smemRaw);
  const uint32_t base = (raw + wgmma::kAtomBytes - 1) & ~(wgmma::kAtomBytes - 1);
  float* partial = reinterpret_cast<float*>(smemRaw + (base - raw));
  const uint32_t bars = base + kStages * kStageBytes;
  const auto full = [&](int s) { return bars + 8 * s; };
  const auto empty = [&](int s) { return bars + 8 * (kStages + s); };
  const auto weightTile = [&](int s) { return base + s * kStageBytes; };
  const auto xTile = [&](int s) { return base + s * kStageBytes + kPanels * kPanelW; };

  const int splits = gridDim.x, split = blockIdx.x;
  const int col0 = blockIdx.y * kOutCols;
  // skinnyGemmSplits divides k's kBlockK granules evenly, so both stage sizes cut the same k ranges.
  const int stagesK = k / kStageK;
  const int first = split * stagesK / splits, count = (split + 1) * stagesK / splits - first;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; s++) {
      barrierInit(full(s), 1);
      barrierInit(empty(s), kConsumerThreads / 32);
    }
    barrierInitFence();
  }
  __syncthreads();
  allowDependentLaunch();

  float acc[2][8][4] = {};
  if (warp == kConsumerThreads / 32) {
    if (lane == 0) {
      prefetchTensorMap(&wMap);
      prefetchTensorMap(&xMap);
      uint64_t evictFirst, evictLast;
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(evictFirst));
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(evictLast));
      const auto loadWeights = [&](int i, int s) {
        for (int p = 0; p < kPanels; p++) {
          const int at = (first + i) * kStageK + p * 64;
          const uint32_t dst = weightTile(s) + p * kPanelW;
          tmaLoadTile(dst, &wMap, full(s), at, col0, evictFirst);
          if (kGlu) tmaLoadTile(dst + kPanelW / 2, &wMap, full(s), at, outCols + col0, evictFirst);
        }
      };
      const auto loadX = [&](int i, int s) {
        for (int p = 0; p < kPanels; p++) {
          tmaLoadTile(xTile(s) + p * kPanelX, &xMap, full(s), (first + i) * kStageK + p * 64, 0, evictLast);
        }
      };
      // The first stages' weights while earlier kernels still run; x only after they have completed.
      const int preloaded = min(kStages, count);
      for (int i = 0; i < preloaded; i++) {
        barrierArriveExpecting(full(i), kStageBytes);
        loadWeights(i, i);
      }
      waitForPriorGrids();
      for (int i = 0; i < preloaded; i++) loadX(i, i);
      for (int i = preloaded; i < count; i++) {
        const int s = i % kStages;
        barrierWait(empty(s), ((i / kStages) & 1) ^ 1);
        barrierArriveExpecting(full(s), kStageBytes);
        loadWeights(i, s);
        loadX(i, s);
      }
    } else {
      waitForPriorGrids();
    }
  } else {
    waitForPriorGrids();
    for (int i = 0; i < count; i++) {
      const int s = i % kStages;
      barrierWait(full(s), (i / kStages) & 1);
      wgmma::wgmmaFence();
#pragma unroll
      for (int p = 0; p < kPanels; p++) {
#pragma unroll
        for (int step = 0; step < 4; step++) {
          const uint64_t b = wgmma::descriptor(xTile(s) + p * kPanelX + step * 32, 16);
#pragma unroll
          for (int h = 0; h < 2; h++) {
            wgmma::wgmmaKMajor(acc[h], wgmma::descriptor(weightTile(s) + p * kPanelW + h * 8192 + step * 32, 16), b,
                               true);
          }
        }
      }
      wgmma::wgmmaCommit();
      // Stage i - 1's products have completed once at most this stage's group is still running.
      if (i > 0) {
        wgmma::wgmmaWait<1>();
        if (lane == 0) barrierArrive(empty((i - 1) % kStages));
      }
    }
    wgmma::wgmmaWaitAll();
    wgmma::holdRegisters(acc[0]);
    wgmma::holdRegisters(acc[1]);
    // Every warp's products done before the stages are overwritten with the partial tile.
    asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
#pragma unroll
      for (int j = 0; j < 8; j++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
          const int row = h * 64 + warp * 16 + g + (r >= 2 ? 8 : 0);
          partial[(j * 8 + 2 * t + (r & 1)) * kPartialStride + row] = acc[h][j][r];
        }
      }
    }
  }
  if (splits > 1) {
    cluster::sync();
  } else {
    __syncthreads();
  }
  // This block's slice of the tile's m × kOutCols outputs, four columns a chunk.
  constexpr int kChunksPerRow = kOutCols / 4;
  const int chunks = m * kChunksPerRow;
  const uint32_t partialAddress = sharedAddress(partial);
  for (int c = split * chunks / splits + threadIdx.x; c < (split + 1) * chunks / splits; c += kThreads) {
    const int token = c / kChunksPerRow, col = c % kChunksPerRow * 4;
    float4 sum[kGlu ? 2 : 1];
#pragma unroll
    for (int half = 0; half < (kGlu ? 2 : 1); half++) {
      const int at = token * kPartialStride + half * kOutCols + col;
      if (splits == 1) {
        sum[half] = *reinterpret_cast<const float4*>(partial + at);
        continue;
      }
      float4 v[kMaxSplits];
#pragma unroll
      for (int q = 0; q < kMaxSplits; q++) {
        if (q < splits) v[q] = loadRemote4(cluster::mapTo(partialAddress + at * 4, q));
      }
      sum[half] = v[0];
#pragma unroll
      for (int q = 1; q < kMaxSplits; q++) {
        if (q < splits) sum[half].x += v[q].x, sum[half].y += v[q].y, sum[half].z += v[q].z, sum[half].w += v[q].w;
      }
    }
    float4 out = sum[0];
    if constexpr (kGlu) {
      out = make_float4(swiglu(sum[0].x, sum[1].x), swiglu(sum[0].y, sum[1].y), swiglu(sum[0].z, sum[1].z),
                        swiglu(sum[0].w, sum[1].w));
    }
    const __nv_bfloat162 lo = __floats2bfloat162_rn(out.x, out.y), hi = __floats2bfloat162_rn(out.z, out.w);
    uint2 bits;
    bits.x = *reinterpret_cast<const uint32_t*>(&lo);
    bits.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(y + static_cast<size_t>(token) * outCols + col0 + col) = bits;
  }
  if (splits > 1) cluster::sync();  // every block's partial stays until the others have read it
#else
  __trap();  // launched only where skinnyGemmAvailable holds, which needs this kernel built for sm_90a
#endif
}

// The kernel's shared-memory opt-in, once; it also loads the kernel.
template <bool kGlu, int kPanels>
void prepare() {
  static const cudaError_t optIn = cudaFuncSetAttribute(
      skinnyGemmKernel<kGlu, kPanels>, cudaFuncAttributeMaxDynamicSharedMemorySize, sharedBytes(kPanels));
  checkCuda(optIn, "skinnyGemmKernel");
}

template <bool kGlu, int kPanels>
void launchWith(const CUtensorMap& xMap, const CUtensorMap& wMap, bf16* y, int m, int outCols, int k, dim3 grid,
                int splits, cudaStream_t stream) {
  prepare<kGlu, kPanels>();
  launchKernelInClusters("skinnyGemmKernel", skinnyGemmKernel<kGlu, kPanels>, grid, dim3(splits, 1, 1), kThreads,
                         sharedBytes(kPanels), stream, xMap, wMap, y, m, outCols, k);
}

PFN_cuTensorMapEncodeTiled_v12000 encodeTiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    checkCuda(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &found),
              "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (found != cudaDriverEntryPointSuccess || entry == nullptr) {
      throw NativeError("unsupported_architecture", "the CUDA driver has no cuTensorMapEncodeTiled");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return encode;
}

}  // namespace

bool skinnyGemmAvailable(int device) {
  return switchedOn("FERRUM_CUDA_SKINNY_GEMM") && hopperKernelsBuilt(device);
}

bool skinnyGemmSupports(const bf16* x, const bf16* w, const void* y, int m, int outCols, int k, bool outF32, bool glu) {
  return m > kGemvMaxRows && m <= kSkinnyMaxRows && !outF32 && k % kBlockK == 0 && k >= 2 * kBlockK &&
         outCols % (glu ? kBlockRows / 2 : kBlockRows) == 0 && outCols > 0 && allAligned(16, {x, w}) &&
         allAligned(8, {y});
}

int skinnyWeightBoxRows(bool glu) { return glu ? kBlockRows / 2 : kBlockRows; }

CUtensorMap skinnyTensorMap(const bf16* base, int rows, int k, int boxRows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * sizeof(bf16)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(boxRows)};
  const cuuint32_t elementStrides[2] = {1, 1};
  const CUresult status = encodeTiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<bf16*>(base), dims,
                                        strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS) {
    throw NativeError("internal", "cuTensorMapEncodeTiled failed (" + std::to_string(static_cast<int>(status)) +
                                      ") for " + std::to_string(rows) + " x " + std::to_string(k));
  }
  return map;
}

int skinnyGemmSplits(int outCols, int k, bool glu) {
  const int blocks = outCols / (glu ? kBlockRows / 2 : kBlockRows);
  const int blocksK = k / kBlockK;
  for (int splits = std::min(kMaxSplits, blocksK / 2); splits > 1; splits--) {
    if (blocksK % splits != 0) continue;
    prepare<false, 2>();
    if (blocks <= residentClusters<skinnyGemmKernel<false, 2>>(dim3(splits, 1, 1), kThreads, sharedBytes(2))) {
      return splits;
    }
  }
  return 1;
}

bool skinnyGemmOnePanel(int m, int outCols, bool glu, int splits) {
  if (m < kOnePanelMinRows) return false;
  // Clusters of the two-panel kernel the device holds at once (the same for the plain and the gated kernel).
  prepare<false, 2>();
  const int oneWave = residentClusters<skinnyGemmKernel<false, 2>>(dim3(splits, 1, 1), kThreads, sharedBytes(2));
  return outCols / (glu ? kBlockRows / 2 : kBlockRows) > oneWave;
}

void launchSkinnyGemm(const CUtensorMap& xMap, const CUtensorMap& wMap, bf16* y, int m, int outCols, int k, bool glu,
                      int splits, bool onePanel, cudaStream_t stream) {
  const dim3 grid(splits, outCols / (glu ? kBlockRows / 2 : kBlockRows));
  if (glu) {
    (onePanel ? launchWith<true, 1> : launchWith<true, 2>)(xMap, wMap, y, m, outCols, k, grid, splits, stream);
  } else {
    (onePanel ? launchWith<false, 1> : launchWith<false, 2>)(xMap, wMap, y, m, outCols, k, grid, splits, stream);
  }
}

}  // namespace ferrum
