// The skinny GEMM (gemm-skinny.cu): y[M,N] = x[M,K] · w[N,K]ᵀ for kGemvMaxRows < M ≤ kSkinnyMaxRows on Hopper's
// TMA and wgmma, plain or with SwiGLU fused for the gated MLP's gate|up product. Gemm::run and Gemm::runSwiglu
// dispatch to it; the tensor maps are the caller's (Gemm keeps them per operand).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels.h"

namespace ferrum {

/** The most rows (tokens) the skinny GEMM takes: the tokens are its MMA's N of 64. */
constexpr int kSkinnyMaxRows = 64;

/**
 * Whether the skinny GEMM runs on `device`: Hopper, with the kernels built for sm_90a (FERRUM_CUDA_ARCHS), unless
 * FERRUM_CUDA_SKINNY_GEMM=0.
 */
bool skinnyGemmAvailable(int device);

/**
 * Whether launchSkinnyGemm takes this product (where skinnyGemmAvailable): kGemvMaxRows < m ≤ kSkinnyMaxRows, a bf16
 * output, k a multiple of 128 (at least 256), `outCols` (n, or inter when `glu`) a multiple of 128 (64 when `glu`),
 * x and w 16-byte aligned, y 8-byte aligned.
 */
bool skinnyGemmSupports(const bf16* x, const bf16* w, const void* y, int m, int outCols, int k, bool outF32, bool glu);

/**
 * A TMA tensor map of the row-major bf16 matrix `base` [rows][k], loaded in boxes of `boxRows` rows × 64 k with
 * 128-byte swizzling. x takes boxRows kSkinnyMaxRows (rows past m are zero-filled), w skinnyWeightBoxRows.
 */
CUtensorMap skinnyTensorMap(const bf16* base, int rows, int k, int boxRows);
/** The box rows of a weight's tensor map: 128 rows a block, or 64 gate and 64 up rows when `glu`. */
int skinnyWeightBoxRows(bool glu);

/**
 * The split-K count of a product on the current device: the most splits, up to 8 and dividing k's 128-wide blocks,
 * whose clusters all fit the device at once. A function of the shape and the device only, so that a product's
 * result never depends on its row count or on a timing.
 */
int skinnyGemmSplits(int outCols, int k, bool glu);

/**
 * Whether a product of m rows runs stages of one 64-k panel, two blocks a multiprocessor, rather than two panels at
 * one: from 17 rows, where its grid of `splits` has more clusters than the device holds at one a multiprocessor. The
 * bits are the same either way. A function of the shape, the row count and the device, made once per plan.
 */
bool skinnyGemmOnePanel(int m, int outCols, bool glu, int splits);

/**
 * y[m][outCols] = x · wᵀ (w [outCols][k]), or with `glu` y[m][j] = silu(x · gate_jᵀ) × (x · up_jᵀ) for
 * w = gate|up [2 · outCols][k], rounded as launchSwiglu after a bf16 product would; xMap and wMap from
 * skinnyTensorMap, `splits` from skinnyGemmSplits, `onePanel` from skinnyGemmOnePanel. Within skinnyGemmSupports
 * only.
 */
void launchSkinnyGemm(const CUtensorMap& xMap, const CUtensorMap& wMap, bf16* y, int m, int outCols, int k, bool glu,
                      int splits, bool onePanel, cudaStream_t stream);

}  // namespace ferrum
