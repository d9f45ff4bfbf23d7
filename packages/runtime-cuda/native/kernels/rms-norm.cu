// Fused residual add + RMSNorm, one block per row. Rounding follows Hugging Face's bf16 modules: the
// residual sum is rounded to bf16, the normalized value is rounded before the weight multiplies it.
#include "../cuda-check.h"
#include "device-math.cuh"
#include "kernels.h"

namespace ferrum {
namespace {

__device__ __forceinline__ float residualValue(const bf16* res, const bf16* delta, const bf16* deltaBias, int j) {
  float v = __bfloat162float(res[j]);
  if (delta == nullptr) return v;
  float d = __bfloat162float(delta[j]);
  if (deltaBias != nullptr) d = roundBf16(d + __bfloat162float(deltaBias[j]));
  return roundBf16(v + d);
}

__global__ void addRmsNormKernel(bf16* residual, const bf16* delta, const bf16* deltaBias, const int* rowIndex,
                                 const bf16* weight, bf16* out, int hidden, float eps) {
  __shared__ float scratch[32];
  const int i = blockIdx.x;
  const size_t row = rowIndex != nullptr ? static_cast<size_t>(rowIndex[i]) : static_cast<size_t>(i);
  bf16* res = residual + row * hidden;
  const bf16* d = delta != nullptr ? delta + row * hidden : nullptr;
  const bool writeBack = rowIndex == nullptr && d != nullptr;
  float sumSquares = 0.f;
  for (int j = threadIdx.x; j < hidden; j += blockDim.x) {
    const float v = residualValue(res, d, deltaBias, j);
    if (writeBack) res[j] = __float2bfloat16(v);
    sumSquares += v * v;
  }
  const float inv = rsqrtf(blockSum(sumSquares, scratch) / hidden + eps);
  bf16* o = out + static_cast<size_t>(i) * hidden;
  for (int j = threadIdx.x; j < hidden; j += blockDim.x) {
    // A thread re-reads only the elements it wrote itself, so no barrier is needed before this read.
    const float v = writeBack ? __bfloat162float(res[j]) : residualValue(res, d, deltaBias, j);
    o[j] = __float2bfloat16(__bfloat162float(weight[j]) * roundBf16(v * inv));
  }
}

}  // namespace

void launchAddRmsNorm(bf16* residual, const bf16* delta, const bf16* deltaBias, const int* rowIndex,
                      const bf16* weight, bf16* out, int rows, int hidden, float eps, cudaStream_t stream) {
  if (rows == 0) return;
  addRmsNormKernel<<<rows, 256, 0, stream>>>(residual, delta, deltaBias, rowIndex, weight, out, hidden, eps);
  FERRUM_LAUNCHED("addRmsNormKernel");
}

}  // namespace ferrum
