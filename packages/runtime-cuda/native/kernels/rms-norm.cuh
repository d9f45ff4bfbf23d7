// The element rules of the fused residual add + RMSNorm, shared by addRmsNormKernel and the GEMV's norm
// prologue so both round as Hugging Face's bf16 modules do: a delta bias is added to the delta and rounded,
// the residual sum is rounded, and the normalized value is rounded before the weight multiplies it.
#pragma once

#include "device-math.cuh"

namespace ferrum {

/** x = bf16(residual + bf16(delta + bias)); `hasBias` false skips the bias (and its rounding). */
__device__ __forceinline__ float residualSum(float residual, float delta, float bias, bool hasBias) {
  return roundBf16(residual + (hasBias ? roundBf16(delta + bias) : delta));
}

/** weight × bf16(x / rms): the normalized value before its final rounding to bf16. */
__device__ __forceinline__ float normalized(float x, float inv, float weight) { return weight * roundBf16(x * inv); }

}  // namespace ferrum
