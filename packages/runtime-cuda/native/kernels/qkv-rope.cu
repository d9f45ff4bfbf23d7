// After the fused QKV projection: bias, q/k RMSNorm (Qwen3), RoPE with Hugging Face's rotate_half layout
// (element d pairs with d ± headDim/2), q written back in place, k and v written to the pool at slotMapping.
// One warp per (token, head), a block per token and up to kWarps heads. Lane l < 2P holds the E consecutive
// elements from l * E (headDim = 2 * P * E, P <= 16 lanes a half), so the rotation partner of lane l's elements
// is held by lane l ± P, one shuffle away. The token's rotation (cos and sin of each of the headDim / 2 angles)
// is computed once a block, into shared memory, before the block waits for the QKV product: positions are the
// step's upload (kernels/launch.cuh), and sincosf is most of a head's arithmetic.
#include <string>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

constexpr int kWarps = 16;
constexpr int kMaxHalf = 128;  // headDim / 2 for the largest head dim (2 × 16 lanes × 8 elements)

// E elements a lane, moved W at a time (W = E when every pointer allows it, else 1).
template <int E, int W>
__device__ __forceinline__ void loadHead(const bf16* p, float (&f)[E]) {
#pragma unroll
  for (int i = 0; i < E; i += W) loadBf16<W>(p + i, reinterpret_cast<float(&)[W]>(f[i]));
}

template <int E, int W>
__device__ __forceinline__ void storeHead(bf16* p, const float (&f)[E]) {
#pragma unroll
  for (int i = 0; i < E; i += W) storeBf16<W>(p + i, reinterpret_cast<const float(&)[W]>(f[i]));
}

template <int E, int W>
__global__ void __launch_bounds__(kWarps * 32) qkvRopeKernel(QkvRopeArgs a) {
  __shared__ float cosS[kMaxHalf], sinS[kMaxHalf];
  const int t = blockIdx.x;
  const int D = a.headDim;
  allowDependentLaunch();
  const float position = static_cast<float>(a.positions[t]);
  for (int i = threadIdx.x; i < D / 2; i += kWarps * 32) sincosf(position * a.invFreq[i], &sinS[i], &cosS[i]);
  __syncthreads();
  const int numHeadsTotal = a.numHeads + 2 * a.numKvHeads;
  const int h = blockIdx.y * kWarps + (threadIdx.x >> 5);
  if (h >= numHeadsTotal) return;  // a whole warp
  const int lane = threadIdx.x & 31;
  const int P = D / (2 * E);  // lanes a half
  const bool active = lane < 2 * P;
  const int d0 = (active ? lane : 0) * E;  // idle lanes read element 0 and are zeroed
  const int freq0 = (active ? lane % P : 0) * E;  // the angle index of element d0 (d0 mod headDim/2)
  const bool isQ = h < a.numHeads;
  const bool isV = h >= a.numHeads + a.numKvHeads;
  const bf16* normWeight = isQ ? a.qNorm : (isV ? nullptr : a.kNorm);
  bf16* head = a.qkv + static_cast<size_t>(t) * numHeadsTotal * D + static_cast<size_t>(h) * D;

  // Every load first: the constants (bias, norm weight) and the slot while the kernel before still runs, then
  // the head's elements.
  float x[E], bias[E], norm[E];
  if (a.bias != nullptr) loadHead<E, W>(a.bias + h * D + d0, bias);
  if (normWeight != nullptr) loadHead<E, W>(normWeight + d0, norm);
  const int slotIndex = a.slotMapping[t];  // -1: a decode graph's padded row, whose K/V are not kept
  waitForPriorGrids();
  loadHead<E, W>(head + d0, x);

#pragma unroll
  for (int e = 0; e < E; e++) {
    if (a.bias != nullptr) x[e] = roundBf16(x[e] + bias[e]);
    if (!active) x[e] = 0.f;
  }
  if (normWeight != nullptr) {
    float sumSquares = 0.f;
#pragma unroll
    for (int e = 0; e < E; e++) sumSquares += x[e] * x[e];
    const float inv = rsqrtf(warpSum(sumSquares) / D + a.eps);
#pragma unroll
    for (int e = 0; e < E; e++) x[e] = roundBf16(norm[e] * roundBf16(x[e] * inv));
  }
  if (!isV) {
    const int partner = !active ? lane : (lane < P ? lane + P : lane - P);
    float other[E];
#pragma unroll
    for (int e = 0; e < E; e++) other[e] = __shfl_sync(0xffffffffu, x[e], partner);
#pragma unroll
    for (int e = 0; e < E; e++) {
      const float rotated = lane < P ? -other[e] : other[e];
      x[e] = x[e] * cosS[freq0 + e] + rotated * sinS[freq0 + e];
    }
  }
  if (!active || (!isQ && slotIndex < 0)) return;
  bf16* dst = head;
  if (!isQ) {
    const int kvHead = h - a.numHeads - (isV ? a.numKvHeads : 0);
    const size_t kvDim = static_cast<size_t>(a.numKvHeads) * D;
    dst = (isV ? a.vCache : a.kCache) + static_cast<size_t>(slotIndex) * kvDim + static_cast<size_t>(kvHead) * D;
  }
  storeHead<E, W>(dst + d0, x);
}

template <int E>
void launchFor(const QkvRopeArgs& a, cudaStream_t stream) {
  const dim3 grid(a.numTokens, (a.numHeads + 2 * a.numKvHeads + kWarps - 1) / kWarps);
  if (allAligned(2 * E, {a.qkv, a.bias, a.qNorm, a.kNorm, a.kCache, a.vCache})) {
    launchKernel("qkvRopeKernel", qkvRopeKernel<E, E>, grid, kWarps * 32, 0, stream, a);
  } else {
    launchKernel("qkvRopeKernel", qkvRopeKernel<E, 1>, grid, kWarps * 32, 0, stream, a);
  }
}

}  // namespace

void launchQkvRope(const QkvRopeArgs& args, cudaStream_t stream) {
  if (args.numTokens == 0) return;
  // The fewest elements a lane (E) with headDim = 2 * P * E and P <= 16.
  const int D = args.headDim;
  const auto fits = [D](int e) { return D % (2 * e) == 0 && D / (2 * e) <= 16; };
  if (fits(1)) {
    launchFor<1>(args, stream);
  } else if (fits(2)) {
    launchFor<2>(args, stream);
  } else if (fits(4)) {
    launchFor<4>(args, stream);
  } else if (fits(8)) {
    launchFor<8>(args, stream);
  } else {
    throw NativeError("unsupported_architecture", "RoPE does not support head dim " + std::to_string(D));
  }
}

}  // namespace ferrum
