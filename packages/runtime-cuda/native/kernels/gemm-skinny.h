// The skinny GEMM (gemm-skinny.cu): y[M,N] = x[M,K] · w[N,K]ᵀ on tensor cores for decode batches of
// kSkinnyMinRows..kSkinnyMaxRows rows, where the product is a stream of the weights. Gemm (gemm.cc) picks
// between it and cuBLASLt per shape.
#pragma once

#include <cstddef>

#include "kernels.h"

namespace ferrum {

/** The fewest rows the skinny kernel takes (fewer go to launchGemv). */
constexpr int kSkinnyMinRows = 3;
/** The most rows the skinny kernel takes. */
constexpr int kSkinnyMaxRows = 64;

/**
 * Device scratch of the split-K reduction, set up once by the caller. Between launches on one stream:
 * `counters` must start at zero and every launch leaves them at zero (so they must not share memory with
 * anything else); `partials` is overwritten by every launch and may be shared with other stream-ordered scratch.
 */
struct SkinnyWorkspace {
  unsigned* counters;
  int numCounters;
  float* partials;
  size_t partialBytes;
  int numSms;  // multiprocessors of the device
};

/** Whether launchSkinnyGemm takes this product: m in [kSkinnyMinRows, kSkinnyMaxRows], k % 8 == 0, x and w 16-byte aligned. */
bool skinnyGemmSupports(const bf16* x, const bf16* w, int m, int k);

/**
 * The grid of a launch for this shape: `perSm` blocks on every multiprocessor (0: as many as fit), fewer when
 * the product is small or `ws` cannot hold the partials. Any value from here gives the same bits run to run.
 */
int skinnyGemmBlocks(int m, int n, int k, int perSm, const SkinnyWorkspace& ws);

/**
 * y[m][n] = x[m][:] · w[n][:] over k (x [m][k], w [n][k], y [m][n], all row-major) with f32 accumulation; y is
 * f32 when `outF32`, else bf16 rounded to nearest even. `blocks` from skinnyGemmBlocks. Deterministic: the
 * split-K partials are summed in a fixed order. Throws outside skinnyGemmSupports.
 */
void launchSkinnyGemm(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, int blocks,
                      const SkinnyWorkspace& ws, cudaStream_t stream);

}  // namespace ferrum
