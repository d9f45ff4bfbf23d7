// Fused residual add + RMSNorm, one block per row. Rounding follows Hugging Face's bf16 modules: the
// residual sum is rounded to bf16 (a delta bias is added to the delta and rounded first), the normalized
// value is rounded before the weight multiplies it.
// Each thread owns kIters chunks of kVec consecutive elements: every load of the row is issued up front, the
// values stay in registers through the block reduction, and nothing is re-read for the output pass.
#include <algorithm>
#include <string>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kVectorWidth = 8;  // 16-byte accesses
// Chunks a thread owns: one up to hidden 8192, two up to 16384. Two hold 63 registers, so a multiprocessor takes 3
// blocks of a 2560-wide row and 512 rows run in two waves; one holds 36 and 5 blocks, one wave. H100, 72 launches
// back to back with PDL, 512 rows of 2560: 3.40 against 4.33 µs a launch (L2-resident), 5.25 against 6.98 (from
// memory); the same bits (bench/results/cuda-norm-occupancy-2026-11-23-pass29.md).
constexpr int kVectorIters = 2;
constexpr int kScalarIters = 8;  // the fallback for odd sizes or alignments: hidden up to 8192 in 64 registers

template <int kVec, int kIters>
__global__ void __launch_bounds__(kMaxThreads)
    addRmsNormKernel(bf16* residual, const bf16* delta, const bf16* deltaBias, const int* rowIndex,
                     const bf16* weight, bf16* out, int hidden, float eps) {
  __shared__ float scratch[32];
  // Chunks past the row end read chunk 0 (a valid address) and are zeroed, so every load is unconditional and
  // the compiler issues all of them before the first use; no store happens until they are all consumed.
  int offset[kIters];
  bool active[kIters];
#pragma unroll
  for (int j = 0; j < kIters; j++) {
    const int e = (threadIdx.x + j * blockDim.x) * kVec;
    active[j] = e < hidden;
    offset[j] = active[j] ? e : 0;
  }
  // The norm weight is constant: loaded while the kernel before still runs.
  float x[kIters][kVec], w[kIters][kVec];
#pragma unroll
  for (int j = 0; j < kIters; j++) loadBf16<kVec>(weight + offset[j], w[j]);
  beginDependentWork();

  const int i = blockIdx.x;
  const size_t row = rowIndex != nullptr ? static_cast<size_t>(rowIndex[i]) : static_cast<size_t>(i);
  bf16* res = residual + row * hidden;
  const bf16* d = delta != nullptr ? delta + row * hidden : nullptr;
  const bool writeBack = rowIndex == nullptr && d != nullptr;
#pragma unroll
  for (int j = 0; j < kIters; j++) loadBf16<kVec>(res + offset[j], x[j]);
  if (d != nullptr) {
    float dv[kIters][kVec];
#pragma unroll
    for (int j = 0; j < kIters; j++) loadBf16<kVec>(d + offset[j], dv[j]);
    if (deltaBias != nullptr) {
      float b[kIters][kVec];
#pragma unroll
      for (int j = 0; j < kIters; j++) loadBf16<kVec>(deltaBias + offset[j], b[j]);
#pragma unroll
      for (int j = 0; j < kIters; j++) {
#pragma unroll
        for (int k = 0; k < kVec; k++) dv[j][k] = roundBf16(dv[j][k] + b[j][k]);
      }
    }
#pragma unroll
    for (int j = 0; j < kIters; j++) {
#pragma unroll
      for (int k = 0; k < kVec; k++) x[j][k] = roundBf16(x[j][k] + dv[j][k]);
    }
  }
  float sumSquares = 0.f;
#pragma unroll
  for (int j = 0; j < kIters; j++) {
#pragma unroll
    for (int k = 0; k < kVec; k++) {
      if (!active[j]) x[j][k] = 0.f;
      sumSquares += x[j][k] * x[j][k];
    }
  }
  if (writeBack) {
#pragma unroll
    for (int j = 0; j < kIters; j++) {
      if (active[j]) storeBf16<kVec>(res + offset[j], x[j]);  // exact: x is already a bf16 value
    }
  }
  const float inv = rsqrtf(blockSum(sumSquares, scratch) / hidden + eps);
  bf16* o = out + static_cast<size_t>(i) * hidden;
#pragma unroll
  for (int j = 0; j < kIters; j++) {
    if (!active[j]) continue;
    float y[kVec];
#pragma unroll
    for (int k = 0; k < kVec; k++) y[k] = w[j][k] * roundBf16(x[j][k] * inv);
    storeBf16<kVec>(o + offset[j], y);
  }
}

// One thread per chunk up to kMaxThreads, in whole warps.
int threadsFor(int chunks) { return std::min(kMaxThreads, (chunks + 31) / 32 * 32); }

}  // namespace

void launchAddRmsNorm(bf16* residual, const bf16* delta, const bf16* deltaBias, const int* rowIndex,
                      const bf16* weight, bf16* out, int rows, int hidden, float eps, cudaStream_t stream) {
  if (rows == 0) return;
  const bool vector = hidden % kVectorWidth == 0 && allAligned(16, {residual, delta, deltaBias, weight, out});
  const int maxHidden = vector ? kMaxThreads * kVectorIters * kVectorWidth : kMaxThreads * kScalarIters;
  if (hidden > maxHidden) {
    throw NativeError("unsupported_architecture", "RMSNorm supports hidden sizes up to " + std::to_string(maxHidden) +
                                                      " here, not " + std::to_string(hidden));
  }
  if (vector) {
    const int chunks = hidden / kVectorWidth;
    const auto kernel = chunks <= kMaxThreads ? addRmsNormKernel<kVectorWidth, 1>
                                              : addRmsNormKernel<kVectorWidth, kVectorIters>;
    launchKernel("addRmsNormKernel", kernel, rows, threadsFor(chunks), 0, stream, residual, delta, deltaBias, rowIndex,
                 weight, out, hidden, eps);
  } else {
    launchKernel("addRmsNormKernel", addRmsNormKernel<1, kScalarIters>, rows, threadsFor(hidden), 0, stream, residual,
                 delta, deltaBias, rowIndex, weight, out, hidden, eps);
  }
}

}  // namespace ferrum
