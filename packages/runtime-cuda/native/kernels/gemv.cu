// y[M,N] = x[M,K] · w[N,K]ᵀ for a few rows M (decode): a pure weight stream, on tensor cores with nothing
// staged in shared memory. A block owns 16 weight rows (one mma.m16n8k16 A tile) and its warps split K in
// interleaved chunks of 32. Lane (g = lane / 4, t = lane % 4) loads 16 bytes of weight rows g and g + 8 and of
// x row g at k = chunk + 8t. A dot product does not depend on the order of k, so those 8 values feed two
// k16 steps directly as A and B fragments (the same k permutation on both sides, see mmaChunk): every load is a
// coalesced 16-byte one, none is shuffled. M <= 8 takes one n8 tile, M <= 16 two. The first round of weight
// loads is issued before the programmatic-launch wait, while the kernel before still runs. The warps' tiles
// meet in shared memory in a fixed order: the result is deterministic, with no split-K reduce kernel.
// Gated (kGlu): rows g are gate rows and rows g + 8 the matching up rows of the fused gate|up weight, so a
// block's 8 outputs are silu(gate) × up, each product rounded to bf16 first as the separate GEMM + SwiGLU would.
#include <string>
#include <type_traits>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "tensor-core.cuh"

namespace ferrum {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 32;  // k of one warp step: 4 lanes × 8 values
constexpr int kUnroll = 8;  // chunks a warp has in flight: 2 × 16 bytes a lane each

// A weight vector, read once: not kept in L1, where x lives.
__device__ __forceinline__ uint4 loadStreaming(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Two k16 steps over one chunk. Step s takes this lane's values 4s .. 4s + 3 as mma columns 2t, 2t + 1, 2t + 8,
// 2t + 9, for the weight rows (A) and the x row (B) alike.
template <int NT>
__device__ __forceinline__ void mmaChunk(float (&acc)[NT][4], uint4 lo, uint4 hi, const uint4 (&xv)[NT]) {
  const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y};
  const uint32_t a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    mma16816(acc[nt], a0, xv[nt].x, xv[nt].y);
    mma16816(acc[nt], a1, xv[nt].z, xv[nt].w);
  }
}

template <int NT, typename Out, bool kGlu>
__global__ void __launch_bounds__(kThreads, 2) gemvKernel(const bf16* x, const bf16* w, Out* y, int m, int n, int k) {
  __shared__ float tiles[kWarps][NT][32][4];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  // The lane's two weight rows; rows past N read row 0 and are never written.
  const int first = blockIdx.x * (kGlu ? 8 : 16);
  const int lo = first + g;
  const int hi = kGlu ? n + first + g : first + g + 8;
  const int rowCount = kGlu ? 2 * n : n;
  const int k8 = k / 8;
  const uint4* wLo = reinterpret_cast<const uint4*>(w) + static_cast<size_t>(lo < rowCount ? lo : 0) * k8;
  const uint4* wHi = reinterpret_cast<const uint4*>(w) + static_cast<size_t>(hi < rowCount ? hi : 0) * k8;
  const int numChunks = (k + kChunk - 1) / kChunk;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // Chunk c of this warp's round holds k = c * 32 + 8t .. + 7 of this lane; a chunk past K reads the row's last
  // vector (so the load needs no branch) and is zeroed.
  uint4 wv[kUnroll][2];
  const auto loadRound = [&](int c0) {
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const int v = min((c0 + u * kWarps) * (kChunk / 8) + t, k8 - 1);
      wv[u][0] = loadStreaming(wLo + v);
      wv[u][1] = loadStreaming(wHi + v);
    }
  };
  loadRound(warp);
  waitForPriorGrids();
  allowDependentLaunch();

  const uint4* xRow[NT];
  bool xValid[NT];
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    xValid[nt] = g + 8 * nt < m;
    xRow[nt] = reinterpret_cast<const uint4*>(x) + static_cast<size_t>(xValid[nt] ? g + 8 * nt : 0) * k8;
  }
  float acc[NT][4] = {};
  for (int c0 = warp; c0 < numChunks; c0 += kUnroll * kWarps) {
    if (c0 != warp) loadRound(c0);
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      const int v = (c0 + u * kWarps) * (kChunk / 8) + t;
      if (c0 + u * kWarps >= numChunks) break;
      const bool inK = v < k8;
      uint4 xv[NT];
#pragma unroll
      for (int nt = 0; nt < NT; nt++) xv[nt] = inK && xValid[nt] ? __ldg(xRow[nt] + v) : zero;
      mmaChunk<NT>(acc, inK ? wv[u][0] : zero, inK ? wv[u][1] : zero, xv);
    }
  }

#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
#pragma unroll
    for (int e = 0; e < 4; e++) tiles[warp][nt][lane][e] = acc[nt][e];
  }
  __syncthreads();
  // Warp nt sums n8 tile nt over the warps in order: lane (g, t) holds rows g, g + 8 at columns 2t, 2t + 1.
  if (warp >= NT) return;
  float sum[4] = {};
#pragma unroll
  for (int from = 0; from < kWarps; from++) {
#pragma unroll
    for (int e = 0; e < 4; e++) sum[e] += tiles[from][warp][lane][e];
  }
#pragma unroll
  for (int e = 0; e < 2; e++) {
    const int row = 8 * warp + 2 * t + e;  // of x and y
    if (row >= m) continue;
    if constexpr (kGlu) {
      const int j = first + g;
      const float gate = roundBf16(sum[e]);
      const float up = roundBf16(sum[2 + e]);
      if (j < n) y[static_cast<size_t>(row) * n + j] = __float2bfloat16(roundBf16(gate / (1.f + __expf(-gate))) * up);
    } else {
#pragma unroll
      for (int half = 0; half < 2; half++) {
        const int col = first + g + 8 * half;
        if (col >= n) continue;
        if constexpr (std::is_same_v<Out, float>) {
          y[static_cast<size_t>(row) * n + col] = sum[2 * half + e];
        } else {
          y[static_cast<size_t>(row) * n + col] = __float2bfloat16(sum[2 * half + e]);  // round to nearest even
        }
      }
    }
  }
}

template <typename Out, bool kGlu>
void launchFor(const bf16* x, const bf16* w, void* y, int m, int n, int k, cudaStream_t stream) {
  const int blocks = (n + (kGlu ? 7 : 15)) / (kGlu ? 8 : 16);
  Out* out = static_cast<Out*>(y);
  if (m <= 8) {
    launchKernel("gemvKernel", gemvKernel<1, Out, kGlu>, blocks, kThreads, 0, stream, x, w, out, m, n, k);
  } else {
    launchKernel("gemvKernel", gemvKernel<2, Out, kGlu>, blocks, kThreads, 0, stream, x, w, out, m, n, k);
  }
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

void launchGemv(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  checkSupport(x, w, m, k);
  if (n == 0) return;
  if (outF32) return launchFor<float, false>(x, w, y, m, n, k, stream);
  launchFor<bf16, false>(x, w, y, m, n, k, stream);
}

void launchGemvSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, cudaStream_t stream) {
  checkSupport(x, gateUp, m, k);
  if (inter == 0) return;
  launchFor<bf16, true>(x, gateUp, y, m, inter, k, stream);
}

}  // namespace ferrum
