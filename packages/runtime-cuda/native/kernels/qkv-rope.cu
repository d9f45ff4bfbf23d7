// After the fused QKV projection: bias, q/k RMSNorm (Qwen3), RoPE with Hugging Face's rotate_half layout
// (element d pairs with d ± headDim/2), q written back in place, k and v written to the pool at slotMapping.
// A block per (token, kHeadsPerBlock heads), a warp per head at a time (qk-rope-head.cuh). The token's rotation (cos
// and sin of each of the headDim / 2 angles) is computed once a block, into shared memory, before the block waits
// for the QKV product: positions are the step's upload (kernels/launch.cuh), and sincosf is most of a head's
// arithmetic. Each warp loads its kHeadsPerWarp heads before it transforms any, and sets up its angles, norm
// weights, slot and addresses once for all of them; the head dim is a template argument.
// Why: a warp per (token, head), with the head dim read at run time, spent 225 warp instructions a head (Nsight
// Compute, bench/results/cuda-in-situ-costs-2026-11-22-pass28.md). On the H100 (Qwen3-4B shape, 36 launches back
// to back, L2-resident) this layout took a 512-token prompt from 7.4 to 6.6 µs a launch and 2,048 tokens from 27.1
// to 23.6, with the same output bits (bench/results/cuda-qkv-rope-2026-11-23-pass30.md).

#include "../cuda-check.h"
#include "bf16-vec.cuh"
#include "device-math.cuh"
#include "head-dims.h"
#include "kernels.h"
#include "launch.cuh"
#include "qk-rope-head.cuh"

namespace ferrum {
namespace {

constexpr int kWarps = 8;
constexpr int kHeadsPerWarp = 3;  // loaded before any is transformed
constexpr int kHeadsPerBlock = kWarps * kHeadsPerWarp;

// D: the head dim; W: elements a memory access moves (the lane's E when every pointer allows it, else 1). Block
// (t, y) serves token t's heads from y · kHeadsPerBlock on; warp w of it heads w, w + kWarps, ... At most 64
// registers (four blocks a multiprocessor) below head dim 256: with 4 heads a warp at 71 registers (three blocks)
// a 512-token prompt's kernel ran 7.4 µs, against 6.4-6.7 at 64 (H100, Qwen3-4B shape).
template <int D, int W>
__global__ void __launch_bounds__(kWarps * 32, D < 256 ? 4 : 2) qkvRopeKernel(QkvRopeArgs a) {
  constexpr int E = ropeLaneElements(D);
  __shared__ float cosS[D / 2], sinS[D / 2];
  const int t = blockIdx.x;
  allowDependentLaunch();
  ropeTable(a.positions[t], a.invFreq, D, cosS, sinS);
  const int numHeadsTotal = a.numHeads + 2 * a.numKvHeads;
  const int first = static_cast<int>(blockIdx.y) * kHeadsPerBlock + (threadIdx.x >> 5);
  if (first >= numHeadsTotal) return;  // a whole warp
  const RopeLane r = RopeLane::of<E>(threadIdx.x & 31, D);  // idle lanes read element 0 and are zeroed

  // The constants (angles, norm weights) and the slot while the kernel before still runs.
  float cosv[E], sinv[E], qNorm[E] = {}, kNorm[E] = {};
  laneAngles<E>(r, cosS, sinS, cosv, sinv);
  if (a.qNorm != nullptr) loadHead<E, W>(a.qNorm + r.d0, qNorm);
  if (a.kNorm != nullptr) loadHead<E, W>(a.kNorm + r.d0, kNorm);
  const int slotIndex = a.slotMapping[t];  // -1: a decode graph's padded row, whose K/V are not kept
  const size_t kvDim = static_cast<size_t>(a.numKvHeads) * D;
  bf16* row = a.qkv + static_cast<size_t>(t) * numHeadsTotal * D;
  const bool hasBias = a.bias != nullptr;
  const int heads = min(kHeadsPerWarp, (numHeadsTotal - first + kWarps - 1) / kWarps);  // this warp's
  waitForPriorGrids();

  float x[kHeadsPerWarp][E], bias[kHeadsPerWarp][E];
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; i++) {
    if (i >= heads) break;  // warp-uniform
    const int h = first + i * kWarps;
    loadHead<E, W>(row + static_cast<size_t>(h) * D + r.d0, x[i]);
    if (hasBias) loadHead<E, W>(a.bias + h * D + r.d0, bias[i]);
  }
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; i++) {
    if (i >= heads) break;
    const int h = first + i * kWarps;
    const bool isQ = h < a.numHeads;
    const bool isV = h >= a.numHeads + a.numKvHeads;
    const bool hasNorm = isQ ? a.qNorm != nullptr : !isV && a.kNorm != nullptr;
    float norm[E];  // picked element by element: a reference to either array would put both in local memory
#pragma unroll
    for (int e = 0; e < E; e++) norm[e] = isQ ? qNorm[e] : kNorm[e];
    transformHead<E>(x[i], bias[i], hasBias, norm, hasNorm, !isV, r, cosv, sinv, a.eps, D);
    if (!r.active || (!isQ && slotIndex < 0)) continue;
    bf16* dst = row + static_cast<size_t>(h) * D;
    if (!isQ) {
      const int kvHead = h - a.numHeads - (isV ? a.numKvHeads : 0);
      dst = (isV ? a.vCache : a.kCache) + static_cast<size_t>(slotIndex) * kvDim + static_cast<size_t>(kvHead) * D;
    }
    storeHead<E, W>(dst + r.d0, x[i]);
  }
}

template <int D>
void launchFor(const QkvRopeArgs& a, cudaStream_t stream) {
  constexpr int E = ropeLaneElements(D);
  const dim3 grid(a.numTokens, (a.numHeads + 2 * a.numKvHeads + kHeadsPerBlock - 1) / kHeadsPerBlock);
  if (allAligned(2 * E, {a.qkv, a.bias, a.qNorm, a.kNorm, a.kCache, a.vCache})) {
    launchKernel("qkvRopeKernel", qkvRopeKernel<D, E>, grid, kWarps * 32, 0, stream, a);
  } else {
    launchKernel("qkvRopeKernel", qkvRopeKernel<D, 1>, grid, kWarps * 32, 0, stream, a);
  }
}

}  // namespace

void launchQkvRope(const QkvRopeArgs& args, cudaStream_t stream) {
  if (args.numTokens == 0) return;
  withHeadDim(args.headDim, "RoPE", [&](auto d) { launchFor<decltype(d)::value>(args, stream); });
}

}  // namespace ferrum
