// The table of SIMD kernels a model runs with, chosen at run time (see cpu-features.h).
// Each instruction-set variant lives in its own translation unit compiled with its own flags.
#pragma once

#include "dtype.h"

namespace ferrum {

/**
 * y[t * ldy + n] = (accumulate ? y[t * ldy + n] : 0) + sum_k x[t * ldx + k] * w[n * k + k]
 * for tokens t in [0, numTokens). `w` is a row-major [rows][k] matrix in `dtype`.
 *
 * Invariant every variant keeps: the value of one (t, n) element depends only on x[t] and w[n], never on
 * numTokens, the row range or the tile shape chosen, so a sequence's logits do not depend on its batch.
 */
struct MatmulArgs {
  DType dtype;
  const void* w;
  int k;
  const float* x;
  int ldx;
  int numTokens;
  float* y;
  int ldy;
  bool accumulate;
};

struct KernelTable {
  /** "avx512", "avx2", "neon" or "scalar". */
  const char* name;
  /** Computes rows [rowBegin, rowEnd) of the product described by `args`. */
  void (*matmul)(const MatmulArgs& args, int rowBegin, int rowEnd);
  /** sum_i a[i] * b[i]. */
  float (*dot)(const float* a, const float* b, int n);
  /** y[i] += alpha * x[i]. */
  void (*axpy)(float alpha, const float* x, float* y, int n);
  /** dst[i] = float(src[i]) for a row in `dtype`. */
  void (*widen)(DType dtype, const void* src, float* dst, int n);
};

const KernelTable* scalarKernels();
#if defined(FERRUM_HAVE_AVX2)
const KernelTable* avx2Kernels();
#endif
#if defined(FERRUM_HAVE_AVX512)
const KernelTable* avx512Kernels();
#endif
#if defined(FERRUM_HAVE_NEON)
const KernelTable* neonKernels();
#endif

}  // namespace ferrum
