// Token embedding lookup: one block per token, 16-byte copies (hidden sizes are multiples of 8). An id -1 - i
// is the token sampled at index i of the step before (ForwardBatch.previousTokens), read from the device.
#include "../cuda-check.h"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

__global__ void embeddingKernel(const bf16* table, const int* ids, const int* previous, bf16* out, int hidden,
                                int* resolved) {
  beginDependentWork();
  const int t = blockIdx.x;
  // SAFETY: ids were range-checked on the host before upload; a previous sample is -1 (skipped row) or -2
  // (nothing to sample) only when that step failed, and reads row 0 instead.
  int id = ids[t];
  if (id < 0) id = max(previous[-1 - id], 0);
  if (resolved != nullptr && threadIdx.x == 0) resolved[t] = id;
  const uint4* src = reinterpret_cast<const uint4*>(table + static_cast<size_t>(id) * hidden);
  uint4* dst = reinterpret_cast<uint4*>(out + static_cast<size_t>(t) * hidden);
  for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void launchEmbedding(const bf16* table, const int* ids, const int* previous, bf16* out, int numTokens, int hidden,
                     int* resolved, cudaStream_t stream) {
  if (numTokens == 0) return;
  launchKernel("embeddingKernel", embeddingKernel, numTokens, 128, 0, stream, table, ids, previous, out, hidden,
               resolved);
}

}  // namespace ferrum
