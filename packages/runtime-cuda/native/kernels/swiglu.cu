// SwiGLU on the fused gate|up projection output, rounded like Hugging Face's act_fn(gate) * up in bf16.
#include "../cuda-check.h"
#include "device-math.cuh"
#include "kernels.h"

namespace ferrum {
namespace {

__global__ void swigluKernel(const bf16* gateUp, bf16* out, int inter) {
  const size_t r = blockIdx.y;
  const bf16* gate = gateUp + r * 2 * inter;
  const bf16* up = gate + inter;
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < inter; j += gridDim.x * blockDim.x) {
    const float g = __bfloat162float(gate[j]);
    const float silu = roundBf16(g / (1.f + __expf(-g)));
    out[r * inter + j] = __float2bfloat16(silu * __bfloat162float(up[j]));
  }
}

}  // namespace

void launchSwiglu(const bf16* gateUp, bf16* out, int rows, int inter, cudaStream_t stream) {
  if (rows == 0) return;
  const int blocksX = (inter + 255) / 256;
  swigluKernel<<<dim3(blocksX, rows), 256, 0, stream>>>(gateUp, out, inter);
  FERRUM_LAUNCHED("swigluKernel");
}

}  // namespace ferrum
