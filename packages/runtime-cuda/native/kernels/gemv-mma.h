// The GEMV's tensor-core half (gemv-mma.cu), for 3-8 rows of x; launchGemv and launchGemvSwiglu dispatch to it.
#pragma once

#include <cuda_runtime.h>

#include "kernels.h"

namespace ferrum {

/** The smallest row count launchGemv hands to launchGemvMma. */
constexpr int kGemvMmaMinRows = 3;
/**
 * Block sizes (outputs a block) of launchGemvMma, the default (untuned shapes) first; gated products stream twice
 * the rows and take 8 or 16. Isolated at 3-8 rows on the H100 (Qwen3-4B): 16 fastest or within 5% for plain
 * products (8 up to 24% slower), 8 fastest for gated ones (16 up to 36% slower).
 */
constexpr int kGemvMmaRowsPerBlock[] = {16, 8, 32};
constexpr int kGemvMmaSwigluRowsPerBlock[] = {8, 16};

/**
 * launchGemv (Out f32 or bf16, kGlu false) or launchGemvSwiglu (Out bf16, kGlu true, n = inter) for
 * kGemvMmaMinRows <= m <= kGemvMaxRows, within gemvSupports; `rowsPerBlock` from the lists above.
 */
template <typename Out, bool kGlu>
void launchGemvMma(const bf16* x, const bf16* w, void* y, int m, int n, int k, int rowsPerBlock, cudaStream_t stream);

}  // namespace ferrum
