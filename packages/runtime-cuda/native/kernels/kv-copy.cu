// Slot copies between token pools (device↔device, device↔mapped pinned host for swap): one block per
// (pair, layer) copies that slot's K and V rows with 16-byte accesses.
#include "../cuda-check.h"
#include "kernels.h"

namespace ferrum {
namespace {

__global__ void kvCopyKernel(const bf16* fromK, const bf16* fromV, size_t fromSlots, bf16* toK, bf16* toV,
                             size_t toSlots, const int* src, const int* dst, int kvDim) {
  const size_t layer = blockIdx.y;
  const size_t from = (layer * fromSlots + static_cast<size_t>(src[blockIdx.x])) * kvDim;
  const size_t to = (layer * toSlots + static_cast<size_t>(dst[blockIdx.x])) * kvDim;
  const uint4* fk = reinterpret_cast<const uint4*>(fromK + from);
  const uint4* fv = reinterpret_cast<const uint4*>(fromV + from);
  uint4* tk = reinterpret_cast<uint4*>(toK + to);
  uint4* tv = reinterpret_cast<uint4*>(toV + to);
  for (int i = threadIdx.x; i < kvDim / 8; i += blockDim.x) {
    tk[i] = fk[i];
    tv[i] = fv[i];
  }
}

}  // namespace

void launchKvCopy(const bf16* fromK, const bf16* fromV, size_t fromSlots, bf16* toK, bf16* toV, size_t toSlots,
                  const int* src, const int* dst, int count, int numLayers, int kvDim, cudaStream_t stream) {
  if (count == 0) return;
  kvCopyKernel<<<dim3(count, numLayers), 128, 0, stream>>>(fromK, fromV, fromSlots, toK, toV, toSlots, src, dst,
                                                          kvDim);
  FERRUM_LAUNCHED("kvCopyKernel");
}

}  // namespace ferrum
