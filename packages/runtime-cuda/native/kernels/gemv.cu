// y[M,N] = x[M,K] · w[N,K]ᵀ for a few rows M: a pure weight stream, so the kernel is built for memory
// bandwidth. A block owns kRows consecutive outputs n and splits K among its threads: each thread issues
// 16 16-byte weight loads (kRows × kUnroll, past L1, which keeps x) before using any, and reads x through L1.
// kRows (4, 8 or 16) sets how many blocks a product takes: Gemm::tune times each for a shape, since a grid
// just over one wave of resident blocks (o_proj at 4 rows a block) leaves a long tail. The block's partial
// sums meet in shared memory in a fixed order: the result is deterministic, with no split-K reduce kernel.
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "gemv-mma.h"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kLoadsInFlight = 16;  // 16-byte weight loads a thread issues before using any
constexpr int kRowsPerBlock[] = {4, 8, 16};
constexpr int kSwigluRowsPerBlock[] = {4, 8};  // streams twice the rows a block
// Blocks a multiprocessor holds, which caps registers: 5 at one row (89-94 registers, no spills; 4 allowed 102-127),
// so 640 blocks of 4 outputs (o_proj, down_proj of a Qwen3-4B shape) fit one wave on 132 multiprocessors. The PTX
// is the same but for this bound. H100, decode graphs, alternating builds in one call: GPU time a step at B=1
// 3.17 / 3.18 ms against 3.24 / 3.24 in one call; 3.20 / 3.21 against 3.20 / 3.21 in another, whose c1 decode read
// 317 / 315 against 313 / 313 tok/s. Two rows spill at 5, and one row at 6.
template <int M>
constexpr int kBlocksPerSm = M == 1 ? 5 : 4;

// Gated (kGlu): the block's outputs n are silu(gate n) × up n, with gate row n and up row inter + n of w (the
// fused gate|up weight, inter = `n`): both rows are streamed by the same block, so the SwiGLU needs no kernel
// or round trip of its own. Each product is rounded to bf16 first, as the separate GEMM + SwiGLU would.
template <int M, typename Out, bool kGlu, int kRows>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm<M>)
    gemvKernel(const bf16* x, const bf16* w, Out* y, int n, int k) {
  constexpr int kLoadRows = kGlu ? 2 * kRows : kRows;  // weight rows a block streams
  constexpr int kUnroll = kLoadsInFlight / kLoadRows;
  static_assert(kUnroll >= 1 && kUnroll * kLoadRows == kLoadsInFlight, "rows a block must divide the loads");
  constexpr int kOut = M * kRows;
  static_assert(kOut % kWarps == 0, "each warp finishes the same number of outputs");
  __shared__ float partial[kWarps][M * kLoadRows][32];

  const int k8 = k / 8;  // 16-byte vectors a row
  const int n0 = blockIdx.x * kRows;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  // Row r's vectors start at wBase + r * k8 (up rows n rows further); rows past N (the last block) re-read
  // row N - 1 and are never written. Offsets, not kLoadRows pointers, keep registers for loads in flight.
  const uint4* wBase = reinterpret_cast<const uint4*>(w) + static_cast<size_t>(n0) * k8;
  const auto rowOffset = [&](int r) {
    return static_cast<size_t>(min(n0 + r % kRows, n - 1) - n0 + (r >= kRows ? n : 0)) * k8;
  };
  uint4 wv[kUnroll][kLoadRows];
  const auto loadRound = [&](int base) {
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      // Past the row end a thread re-reads the row's last vector (unused), so the loads need no branch.
      const int v = min(base + u * kThreads, k8 - 1);
#pragma unroll
      for (int r = 0; r < kLoadRows; r++) wv[u][r] = loadStreaming(wBase + rowOffset(r) + v);
    }
  };
  // The weights are constant: the first round is in flight before x, the previous kernel's output, is ready.
  loadRound(threadIdx.x);
  beginDependentWork();

  float acc[M][kLoadRows] = {};
  for (int base = threadIdx.x; base < k8; base += kThreads * kUnroll) {
    if (base != threadIdx.x) loadRound(base);
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const int v = base + u * kThreads;
      if (v >= k8) break;
      float wf[kLoadRows][8];
#pragma unroll
      for (int r = 0; r < kLoadRows; r++) unpackBf16(wv[u][r], wf[r]);
#pragma unroll
      for (int m = 0; m < M; m++) {
        float xf[8];
        unpackBf16(__ldg(xv + static_cast<size_t>(m) * k8 + v), xf);
#pragma unroll
        for (int r = 0; r < kLoadRows; r++) {
#pragma unroll
          for (int e = 0; e < 8; e++) acc[m][r] += wf[r][e] * xf[e];
        }
      }
    }
  }

  // Lane-wise sums over the warps, then each warp reduces kOut / kWarps of the outputs across its lanes.
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int m = 0; m < M; m++) {
#pragma unroll
    for (int r = 0; r < kLoadRows; r++) partial[warp][m * kLoadRows + r][lane] = acc[m][r];
  }
  __syncthreads();
  const auto rowSum = [&](int j) {
    float sum = 0.f;
#pragma unroll
    for (int from = 0; from < kWarps; from++) sum += partial[from][j][lane];
    return warpSum(sum);
  };
#pragma unroll
  for (int j = warp; j < kOut; j += kWarps) {
    const int m = j / kRows;
    const int r = j % kRows;
    float value = rowSum(m * kLoadRows + r);
    if constexpr (kGlu) {
      value = swiglu(value, rowSum(m * kLoadRows + kRows + r));
    }
    const int col = n0 + r;
    if (lane == 0 && col < n) {
      if constexpr (std::is_same_v<Out, float>) {
        y[static_cast<size_t>(m) * n + col] = value;
      } else {
        y[static_cast<size_t>(m) * n + col] = __float2bfloat16(value);  // round to nearest even
      }
    }
  }
}

template <int M, typename Out, bool kGlu, int kRows>
void launchRows(const bf16* x, const bf16* w, void* y, int n, int k, cudaStream_t stream) {
  const int blocks = (n + kRows - 1) / kRows;
  launchKernel("gemvKernel", gemvKernel<M, Out, kGlu, kRows>, blocks, kThreads, 0, stream, x, w, static_cast<Out*>(y),
               n, k);
}

template <int M, typename Out, bool kGlu>
void launchFor(const bf16* x, const bf16* w, void* y, int n, int k, int rowsPerBlock, cudaStream_t stream) {
  switch (rowsPerBlock) {
    case 16:
      if constexpr (!kGlu) return launchRows<M, Out, kGlu, 16>(x, w, y, n, k, stream);
      break;
    case 8: return launchRows<M, Out, kGlu, 8>(x, w, y, n, k, stream);
    case 4: return launchRows<M, Out, kGlu, 4>(x, w, y, n, k, stream);
    default: break;
  }
  throw NativeError("internal", "GEMV: unsupported rows a block " + std::to_string(rowsPerBlock));
}

template <typename Out, bool kGlu>
void launchFor(const bf16* x, const bf16* w, void* y, int m, int n, int k, int rowsPerBlock, cudaStream_t stream) {
  if (m == 1) return launchFor<1, Out, kGlu>(x, w, y, n, k, rowsPerBlock, stream);
  if (m == 2) return launchFor<2, Out, kGlu>(x, w, y, n, k, rowsPerBlock, stream);
  launchGemvMma<Out, kGlu>(x, w, y, m, n, k, rowsPerBlock, stream);
}

void checkSupport(const bf16* x, const bf16* w, int m, int k) {
  if (!gemvSupports(x, w, m, k)) {
    throw NativeError("internal", "GEMV called outside its support: m " + std::to_string(m) + ", k " +
                                      std::to_string(k));
  }
}

}  // namespace

bool gemvSupports(const bf16* x, const bf16* w, int m, int k) {
  return m >= 1 && m <= kGemvMaxRows && k % 8 == 0 && allAligned(16, {x, w});
}

std::vector<int> gemvRowsPerBlock(int m, bool swiglu) {
  const auto list = [](const auto& sizes) { return std::vector<int>(std::begin(sizes), std::end(sizes)); };
  if (m >= kGemvMmaMinRows) return swiglu ? list(kGemvMmaSwigluRowsPerBlock) : list(kGemvMmaRowsPerBlock);
  return swiglu ? list(kSwigluRowsPerBlock) : list(kRowsPerBlock);
}

void launchGemv(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, int rowsPerBlock,
                cudaStream_t stream) {
  checkSupport(x, w, m, k);
  if (n == 0) return;
  if (outF32) return launchFor<float, false>(x, w, y, m, n, k, rowsPerBlock, stream);
  launchFor<bf16, false>(x, w, y, m, n, k, rowsPerBlock, stream);
}

void launchGemvSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, int rowsPerBlock,
                      cudaStream_t stream) {
  checkSupport(x, gateUp, m, k);
  if (inter == 0) return;
  launchFor<bf16, true>(x, gateUp, y, m, inter, k, rowsPerBlock, stream);
}

}  // namespace ferrum
