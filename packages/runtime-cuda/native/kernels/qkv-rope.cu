// After the fused QKV projection: bias, q/k RMSNorm (Qwen3), RoPE with Hugging Face's rotate_half layout
// (element d pairs with d ± headDim/2), q written back in place, k and v written to the pool at slotMapping.
// One warp per (token, head) (qk-rope-head.cuh), a block per token and up to kWarps heads. The token's rotation
// (cos and sin of each of the headDim / 2 angles) is computed once a block, into shared memory, before the block
// waits for the QKV product: positions are the step's upload (kernels/launch.cuh), and sincosf is most of a
// head's arithmetic.
#include <string>

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "kernels.h"
#include "launch.cuh"
#include "qk-rope-head.cuh"

namespace ferrum {
namespace {

constexpr int kWarps = 16;
constexpr int kMaxHalf = 128;  // headDim / 2 for the largest head dim (2 × 16 lanes × 8 elements)

template <int E, int W>
__global__ void __launch_bounds__(kWarps * 32) qkvRopeKernel(QkvRopeArgs a) {
  __shared__ float cosS[kMaxHalf], sinS[kMaxHalf];
  const int t = blockIdx.x;
  const int D = a.headDim;
  allowDependentLaunch();
  ropeTable(a.positions[t], a.invFreq, D, cosS, sinS);
  const int numHeadsTotal = a.numHeads + 2 * a.numKvHeads;
  const int h = blockIdx.y * kWarps + (threadIdx.x >> 5);
  if (h >= numHeadsTotal) return;  // a whole warp
  const RopeLane r = RopeLane::of<E>(threadIdx.x & 31, D);  // idle lanes read element 0 and are zeroed
  const bool isQ = h < a.numHeads;
  const bool isV = h >= a.numHeads + a.numKvHeads;
  const bf16* normWeight = isQ ? a.qNorm : (isV ? nullptr : a.kNorm);
  bf16* head = a.qkv + static_cast<size_t>(t) * numHeadsTotal * D + static_cast<size_t>(h) * D;

  // Every load first: the constants (bias, norm weight) and the slot while the kernel before still runs, then
  // the head's elements.
  float x[E], bias[E], norm[E];
  if (a.bias != nullptr) loadHead<E, W>(a.bias + h * D + r.d0, bias);
  if (normWeight != nullptr) loadHead<E, W>(normWeight + r.d0, norm);
  const int slotIndex = a.slotMapping[t];  // -1: a decode graph's padded row, whose K/V are not kept
  waitForPriorGrids();
  loadHead<E, W>(head + r.d0, x);
  transformHead<E>(x, bias, a.bias != nullptr, norm, normWeight != nullptr, !isV, r, cosS, sinS, a.eps, D);
  if (!r.active || (!isQ && slotIndex < 0)) return;
  bf16* dst = head;
  if (!isQ) {
    const int kvHead = h - a.numHeads - (isV ? a.numKvHeads : 0);
    const size_t kvDim = static_cast<size_t>(a.numKvHeads) * D;
    dst = (isV ? a.vCache : a.kCache) + static_cast<size_t>(slotIndex) * kvDim + static_cast<size_t>(kvHead) * D;
  }
  storeHead<E, W>(dst + r.d0, x);
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
  switch (ropeLaneElements(args.headDim)) {
    case 1: return launchFor<1>(args, stream);
    case 2: return launchFor<2>(args, stream);
    case 4: return launchFor<4>(args, stream);
    case 8: return launchFor<8>(args, stream);
    default:
      throw NativeError("unsupported_architecture", "RoPE does not support head dim " + std::to_string(args.headDim));
  }
}

}  // namespace ferrum
