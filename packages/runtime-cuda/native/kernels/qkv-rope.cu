// After the fused QKV projection: bias, q/k RMSNorm (Qwen3), RoPE with Hugging Face's rotate_half layout
// (element d pairs with d ± headDim/2), q written back in place, k and v written to the pool at slotMapping.
// One block per token; each warp takes whole heads, a lane holding elements lane, lane + 32, ...
#include "../cuda-check.h"
#include "device-math.cuh"
#include "kernels.h"

namespace ferrum {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxPerLane = 8;  // head dims up to 256

__global__ void qkvRopeKernel(QkvRopeArgs a) {
  extern __shared__ float rotate[];  // [kWarps][headDim]: the head being rotated, for the partner reads
  const int t = blockIdx.x;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int D = a.headDim;
  const int half = D / 2;
  const int kvDim = a.numKvHeads * D;
  const int qkvDim = (a.numHeads + 2 * a.numKvHeads) * D;
  const int numHeadsTotal = a.numHeads + 2 * a.numKvHeads;
  const float position = static_cast<float>(a.positions[t]);
  const int slotIndex = a.slotMapping[t];  // -1: a decode graph's padded row, whose K/V are not kept
  const size_t slot = static_cast<size_t>(slotIndex < 0 ? 0 : slotIndex);
  float* mine = rotate + warp * D;
  bf16* row = a.qkv + static_cast<size_t>(t) * qkvDim;

  for (int h = warp; h < numHeadsTotal; h += kWarps) {
    const bool isQ = h < a.numHeads;
    const bool isV = h >= a.numHeads + a.numKvHeads;
    float x[kMaxPerLane];
#pragma unroll
    for (int e = 0; e < kMaxPerLane; e++) {
      const int d = lane + 32 * e;
      x[e] = 0.f;
      if (d < D) {
        x[e] = __bfloat162float(row[h * D + d]);
        if (a.bias != nullptr) x[e] = roundBf16(x[e] + __bfloat162float(a.bias[h * D + d]));
      }
    }
    const bf16* normWeight = isQ ? a.qNorm : (isV ? nullptr : a.kNorm);
    if (normWeight != nullptr) {
      float sumSquares = 0.f;
#pragma unroll
      for (int e = 0; e < kMaxPerLane; e++) sumSquares += x[e] * x[e];
      const float inv = rsqrtf(warpSum(sumSquares) / D + a.eps);
#pragma unroll
      for (int e = 0; e < kMaxPerLane; e++) {
        const int d = lane + 32 * e;
        if (d < D) x[e] = roundBf16(__bfloat162float(normWeight[d]) * roundBf16(x[e] * inv));
      }
    }
    if (!isV) {
#pragma unroll
      for (int e = 0; e < kMaxPerLane; e++) {
        const int d = lane + 32 * e;
        if (d < D) mine[d] = x[e];
      }
      __syncwarp();
#pragma unroll
      for (int e = 0; e < kMaxPerLane; e++) {
        const int d = lane + 32 * e;
        if (d < D) {
          const int i = d < half ? d : d - half;
          float sinValue, cosValue;
          sincosf(position * a.invFreq[i], &sinValue, &cosValue);
          const float rotated = d < half ? -mine[d + half] : mine[d - half];
          x[e] = x[e] * cosValue + rotated * sinValue;
        }
      }
      __syncwarp();  // the next head of this warp overwrites `mine`
    }
    if (!isQ && slotIndex < 0) continue;  // uniform across the warp
    bf16* dst;
    if (isQ) {
      dst = row + h * D;
    } else if (!isV) {
      dst = a.kCache + slot * kvDim + (h - a.numHeads) * D;
    } else {
      dst = a.vCache + slot * kvDim + (h - a.numHeads - a.numKvHeads) * D;
    }
#pragma unroll
    for (int e = 0; e < kMaxPerLane; e++) {
      const int d = lane + 32 * e;
      if (d < D) dst[d] = __float2bfloat16(x[e]);
    }
  }
}

}  // namespace

void launchQkvRope(const QkvRopeArgs& args, cudaStream_t stream) {
  if (args.numTokens == 0) return;
  const size_t shared = kWarps * args.headDim * sizeof(float);
  qkvRopeKernel<<<args.numTokens, kWarps * 32, shared, stream>>>(args);
  FERRUM_LAUNCHED("qkvRopeKernel");
}

}  // namespace ferrum
