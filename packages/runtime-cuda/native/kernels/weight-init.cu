// Weight conversion at load (f16/f32 checkpoints become bf16) and seeded dummy weights.
#include <cuda_fp16.h>

#include <algorithm>

#include "../cuda-check.h"
#include "kernels.h"

namespace ferrum {
namespace {

constexpr int kThreads = 256;

int gridFor(size_t count) {
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>((count + kThreads - 1) / kThreads, 65535)));
}

__global__ void convertKernel(const void* src, int dtype, bf16* dst, size_t count) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float v = dtype == static_cast<int>(SourceDtype::kF16) ? __half2float(static_cast<const __half*>(src)[i])
                                                                  : static_cast<const float*>(src)[i];
    dst[i] = __float2bfloat16(v);
  }
}

// SplitMix64 of (seed, index): counter-based, so the fill does not depend on the launch shape.
__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fillUniformKernel(bf16* dst, size_t count, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint64_t z = mix(seed + (i + 1) * 0x9E3779B97F4A7C15ull);
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    dst[i] = __float2bfloat16((2.f * u - 1.f) * scale);
  }
}

__global__ void fillConstantKernel(bf16* dst, size_t count, float value) {
  const bf16 v = __float2bfloat16(value);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = v;
  }
}

}  // namespace

void launchConvertToBf16(const void* src, SourceDtype dtype, bf16* dst, size_t count, cudaStream_t stream) {
  convertKernel<<<gridFor(count), kThreads, 0, stream>>>(src, static_cast<int>(dtype), dst, count);
  FERRUM_LAUNCHED("convertKernel");
}

void launchFillUniform(bf16* dst, size_t count, uint64_t seed, float scale, cudaStream_t stream) {
  fillUniformKernel<<<gridFor(count), kThreads, 0, stream>>>(dst, count, seed, scale);
  FERRUM_LAUNCHED("fillUniformKernel");
}

void launchFillConstant(bf16* dst, size_t count, float value, cudaStream_t stream) {
  fillConstantKernel<<<gridFor(count), kThreads, 0, stream>>>(dst, count, value);
  FERRUM_LAUNCHED("fillConstantKernel");
}

}  // namespace ferrum

#include "../device-probe.h"

namespace ferrum {

bool kernelsRunOn(int device, std::string* why) {
  cudaFuncAttributes attributes{};
  cudaError_t status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaFuncGetAttributes(&attributes, fillConstantKernel);
  if (status == cudaSuccess) return true;
  cudaGetLastError();  // clear the sticky-free error so later calls are unaffected
  *why = std::string("this build has no kernels for the device (") + cudaGetErrorString(status) +
         "); rebuild with FERRUM_CUDA_ARCHS including its compute capability";
  return false;
}

}  // namespace ferrum
