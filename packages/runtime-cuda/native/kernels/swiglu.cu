// SwiGLU on the fused gate|up projection output, rounded like Hugging Face's act_fn(gate) * up in bf16.
// Eight elements per thread with 16-byte loads (intermediate sizes are multiples of 8, checked at load).
#include "../cuda-check.h"
#include "device-math.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

constexpr int kThreads = 256;

__global__ void swigluKernel(const bf16* gateUp, bf16* out, int inter) {
  beginDependentWork();
  const size_t r = blockIdx.y;
  const int j = (blockIdx.x * kThreads + threadIdx.x) * 8;
  if (j >= inter) return;
  const uint4 gateRaw = *reinterpret_cast<const uint4*>(gateUp + r * 2 * inter + j);
  const uint4 upRaw = *reinterpret_cast<const uint4*>(gateUp + r * 2 * inter + inter + j);
  const bf16* gate = reinterpret_cast<const bf16*>(&gateRaw);
  const bf16* up = reinterpret_cast<const bf16*>(&upRaw);
  uint4 result;
  bf16* o = reinterpret_cast<bf16*>(&result);
#pragma unroll
  for (int e = 0; e < 8; e++) {
    o[e] = __float2bfloat16(swiglu(__bfloat162float(gate[e]), __bfloat162float(up[e])));
  }
  *reinterpret_cast<uint4*>(out + r * inter + j) = result;
}

}  // namespace

void launchSwiglu(const bf16* gateUp, bf16* out, int rows, int inter, cudaStream_t stream) {
  if (rows == 0) return;
  const int blocksX = (inter / 8 + kThreads - 1) / kThreads;
  launchKernel("swigluKernel", swigluKernel, dim3(blocksX, rows), kThreads, 0, stream, gateUp, out, inter);
}

}  // namespace ferrum
