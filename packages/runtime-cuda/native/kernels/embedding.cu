// Token embedding lookup: one block per token, 16-byte copies (hidden sizes are multiples of 8).
#include "../cuda-check.h"
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {
namespace {

__global__ void embeddingKernel(const bf16* table, const int* ids, bf16* out, int hidden) {
  waitForPriorGrids();
  allowDependentLaunch();
  const int t = blockIdx.x;
  // SAFETY: ids were range-checked on the host before upload.
  const uint4* src = reinterpret_cast<const uint4*>(table + static_cast<size_t>(ids[t]) * hidden);
  uint4* dst = reinterpret_cast<uint4*>(out + static_cast<size_t>(t) * hidden);
  for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void launchEmbedding(const bf16* table, const int* ids, bf16* out, int numTokens, int hidden, cudaStream_t stream) {
  if (numTokens == 0) return;
  launchKernel("embeddingKernel", embeddingKernel, numTokens, 128, 0, stream, table, ids, out, hidden);
}

}  // namespace ferrum
