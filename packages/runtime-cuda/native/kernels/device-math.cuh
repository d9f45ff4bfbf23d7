// Small device helpers shared by the kernels: warp and block reductions.
#pragma once

#include <cuda_bf16.h>

namespace ferrum {

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/** Sum over the block; every thread gets the result. `scratch` holds 32 floats. */
__device__ __forceinline__ float blockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int numWarps = (blockDim.x + 31) >> 5;
  v = warpSum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < numWarps ? scratch[lane] : 0.f;
  return warpSum(v);
}

__device__ __forceinline__ float roundBf16(float v) { return __bfloat162float(__float2bfloat16(v)); }
// silu(gate) × up from the two f32 products, rounded as Hugging Face's act_fn(gate_proj(x)) * up_proj(x) in bf16:
// each product and silu(gate) to bf16; the caller rounds the result.
__device__ __forceinline__ float swiglu(float gateProduct, float upProduct) {
  const float gate = roundBf16(gateProduct);
  return roundBf16(gate / (1.f + __expf(-gate))) * roundBf16(upProduct);
}

}  // namespace ferrum
