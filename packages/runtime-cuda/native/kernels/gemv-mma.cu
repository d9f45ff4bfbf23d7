// y[M,N] = x[M,K] · w[N,K]ᵀ for 3-8 rows M on tensor cores, streamed like the GEMV (gemv.cu): still a pure
// weight stream, but 3-8 rows of FMAs a weight would cost more issue slots than the stream leaves, and cuBLASLt's
// small-M algorithms reach only 43-69% of the copy rate on these shapes (bench/results/cuda-gemm-2026-11-21.md).
// x's rows are the MMA's 16-row operand (its upper 8 rows zeros, rows past M repeats, never written) and 8
// weight rows its 8 columns, so a block can own as few as 8 outputs and a product spreads over enough blocks to
// fill the GPU. (9-16 rows, loading x's upper rows too, ran slower than cuBLASLt on the H100.)
// Weights go straight from global memory to the B fragments, with no shared memory: the dot product does not
// care in which order k is summed, so a lane feeds each 16-byte load (8 consecutive k of its weight row) to two
// MMAs as if it held the fragment's scattered k, and loads x's k in the same order. A block's 8 warps take
// interleaved 128-wide pieces of k, each lane keeps 16 loads in flight, the first round issued before the wait
// on earlier kernels (weights are constant), and the warps' partial tiles meet in shared memory in a fixed
// order: deterministic, with no split-K kernel.
#include <string>
#include <type_traits>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "gemv-mma.h"
#include "launch.cuh"
#include "tensor-core.cuh"

namespace ferrum {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kLoadsInFlight = 16;  // 16-byte weight loads a lane issues before using any
// 16-byte vectors a lane loads of each weight row a piece: the row's 4 lanes then read 256 contiguous bytes
// (whole 128-byte lines) in 4 consecutive loads. With 1 (64 bytes of each of 8 rows a load and no more) the
// products ran at 35-50% of the copy rate, with 2 at 43-70%, with 4 or 8 at 46-74% (H100, Qwen3-4B shapes).
constexpr int kSpan = 4;
constexpr int kPieceVectors = 4 * kSpan;  // vectors of a row a warp covers a piece

// kRows outputs a block (8, 16 or 32); gated (kGlu): the block also streams the up rows inter + n and writes
// silu(gate) × up, as gemvKernel does.
template <typename Out, bool kGlu, int kRows>
__global__ void __launch_bounds__(kThreads, 2)
    gemvMmaKernel(const bf16* x, const bf16* w, Out* y, int m, int n, int k) {
  constexpr int kTiles = kRows / 8;                      // 8-row weight tiles of the outputs
  constexpr int kLoadTiles = kGlu ? 2 * kTiles : kTiles;  // weight tiles a block streams
  constexpr int kUnroll = kLoadsInFlight / (kLoadTiles * kSpan);  // k pieces a round
  static_assert(kUnroll >= 1 && kUnroll * kLoadTiles * kSpan == kLoadsInFlight, "tiles must divide the loads");
  constexpr int kFragments = kLoadTiles * 2;  // accumulator pairs a lane keeps (the rest are x's zero rows)
  // An MMA waits for the one before it on the same accumulator: a vector's two MMAs go to two chains. Each
  // output's sum order is then the same at every block size (the warps' pieces and their order do not depend on
  // it), so Gemm::tune's choice, which can differ between two loads of a model, never changes a result.
  __shared__ float partial[kWarps][kFragments][32];

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2;  // fragment group: weight row g of each tile, x row g
  const int t = lane & 3;   // which vectors of a piece this lane loads: t, t + 4, ...
  const int k8 = k / 8;
  const int pieces = (k8 + kPieceVectors - 1) / kPieceVectors;
  const int n0 = blockIdx.x * kRows;
  const uint4* wv = reinterpret_cast<const uint4*>(w);
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  // Weight row (in vectors) of load tile i; rows past N (the last block) re-read row N - 1, never written.
  const auto rowStart = [&](int i) {
    const int row = min(n0 + (i % kTiles) * 8 + g, n - 1) + (i >= kTiles ? n : 0);
    return static_cast<size_t>(row) * k8;
  };
  uint4 b[kUnroll][kSpan][kLoadTiles];
  const auto loadRound = [&](int round) {
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
#pragma unroll
      for (int sp = 0; sp < kSpan; sp++) {
        // Past k a lane re-reads the row's last vector: its x is zero (below), so it adds nothing.
        const int v = min(((round + u) * kWarps + warp) * kPieceVectors + sp * 4 + t, k8 - 1);
#pragma unroll
        for (int i = 0; i < kLoadTiles; i++) b[u][sp][i] = loadStreaming(wv + rowStart(i) + v);
      }
    }
  };
  loadRound(0);
  beginDependentWork();

  // x rows past M re-read row M - 1 (their outputs are not written); k past K reads as zero.
  const size_t xRow = static_cast<size_t>(min(g, m - 1)) * k8;
  float acc[2][kLoadTiles][4] = {};
  for (int round = 0; round * kWarps + warp < pieces; round += kUnroll) {
    if (round != 0) loadRound(round);
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const int piece = (round + u) * kWarps + warp;
      if (piece >= pieces) break;
#pragma unroll
      for (int sp = 0; sp < kSpan; sp++) {
        const int v = piece * kPieceVectors + sp * 4 + t;
        const uint4 a = v < k8 ? __ldg(xv + xRow + v) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int i = 0; i < kLoadTiles; i++) {
          // The lane's k 0-3 are the fragments' k (2t, 2t + 1, 2t + 8, 2t + 9) of one MMA, k 4-7 of the other;
          // the A fragment's rows g + 8 are zeros.
          mma16816(acc[0][i], {a.x, 0u, a.y, 0u}, b[u][sp][i].x, b[u][sp][i].y);
          mma16816(acc[1][i], {a.z, 0u, a.w, 0u}, b[u][sp][i].z, b[u][sp][i].w);
        }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kLoadTiles; i++) {
#pragma unroll
    for (int e = 0; e < 2; e++) partial[warp][i * 2 + e][lane] = acc[0][i][e] + acc[1][i][e];
  }
  __syncthreads();
  const auto sum = [&](int fragment, int from) {
    float total = 0.f;
#pragma unroll
    for (int wi = 0; wi < kWarps; wi++) total += partial[wi][fragment][from];
    return total;
  };
  // Element e (0 or 1) of tile i in lane l: x row l / 4, output (weight row) i · 8 + 2 (l % 4) + e.
  for (int j = threadIdx.x; j < kTiles * 2 * 32; j += kThreads) {
    const int fragment = j / 32;
    const int from = j % 32;
    const int row = from >> 2;
    const int col = n0 + (fragment / 2) * 8 + (from & 3) * 2 + fragment % 2;
    if (col >= n || row >= m) continue;
    float value = sum(fragment, from);
    if constexpr (kGlu) {
      value = swiglu(value, sum(fragment + kTiles * 2, from));
    }
    if constexpr (std::is_same_v<Out, float>) {
      y[static_cast<size_t>(row) * n + col] = value;
    } else {
      y[static_cast<size_t>(row) * n + col] = __float2bfloat16(value);  // round to nearest even
    }
  }
}

template <typename Out, bool kGlu, int kRows>
void launchRows(const bf16* x, const bf16* w, void* y, int m, int n, int k, cudaStream_t stream) {
  const int blocks = (n + kRows - 1) / kRows;
  launchKernel("gemvMmaKernel", gemvMmaKernel<Out, kGlu, kRows>, blocks, kThreads, 0, stream, x, w,
               static_cast<Out*>(y), m, n, k);
}

template <typename Out, bool kGlu>
void launchFor(const bf16* x, const bf16* w, void* y, int m, int n, int k, int rowsPerBlock, cudaStream_t stream) {
  switch (rowsPerBlock) {
    case 32:
      if constexpr (!kGlu) return launchRows<Out, kGlu, 32>(x, w, y, m, n, k, stream);
      break;
    case 16: return launchRows<Out, kGlu, 16>(x, w, y, m, n, k, stream);
    case 8: return launchRows<Out, kGlu, 8>(x, w, y, m, n, k, stream);
    default: break;
  }
  throw NativeError("internal", "GEMV (tensor cores): unsupported rows a block " + std::to_string(rowsPerBlock));
}

}  // namespace

template <typename Out, bool kGlu>
void launchGemvMma(const bf16* x, const bf16* w, void* y, int m, int n, int k, int rowsPerBlock,
                   cudaStream_t stream) {
  launchFor<Out, kGlu>(x, w, y, m, n, k, rowsPerBlock, stream);
}

template void launchGemvMma<float, false>(const bf16*, const bf16*, void*, int, int, int, int, cudaStream_t);
template void launchGemvMma<bf16, false>(const bf16*, const bf16*, void*, int, int, int, int, cudaStream_t);
template void launchGemvMma<bf16, true>(const bf16*, const bf16*, void*, int, int, int, int, cudaStream_t);

}  // namespace ferrum
