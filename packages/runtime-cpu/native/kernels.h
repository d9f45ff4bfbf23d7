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
  /**
   * x as the table's packActivations left it: set (and read instead of x) for bf16 weights on a table with
   * bf16Products, null otherwise.
   */
  const uint16_t* xPacked;
  int numTokens;
  float* y;
  int ldy;
  bool accumulate;
};

/** One KV head's rows in the token pool: row j (of `count`) at base + slots[j] × stride, `headDim` floats. */
struct KvRows {
  const float* base;
  size_t stride;
  const int32_t* slots;
  int count;
  int headDim;
};

struct KernelTable {
  /** "amx", "avx512bf16", "avx512", "avx2", "neon" or "scalar". */
  const char* name;
  /**
   * Whether bf16 weights are multiplied as bf16 × bf16 products, as transformers' bf16 modules do: x is rounded
   * to bf16 first (packActivations). Other weight dtypes, and every table without it, multiply in f32.
   */
  bool bf16Products;
  /** Every weight's k must be a multiple of this (AMX tiles read 32 k of a row at a time); 1 for most tables. */
  int kMultiple;
  /**
   * bf16Products only: packActivations' token ranges start at multiples of this (AMX writes 16 tokens into each
   * cache line of a tile, so a range split inside a tile would have two threads writing the same lines).
   */
  int packTokens;
  /** Computes rows [rowBegin, rowEnd) of the product described by `args`. */
  void (*matmul)(const MatmulArgs& args, int rowBegin, int rowEnd);
  /** bf16Products only: the uint16 elements packActivations writes for `numTokens` rows of `k`. */
  size_t (*packedElements)(int numTokens, int k);
  /**
   * bf16Products only: rows [tokenBegin, tokenEnd) of x (numTokens rows of k) rounded to bf16 (to nearest even) into
   * `out`, in the layout matmul reads; the range that ends at numTokens also writes the layout's padding. tokenBegin
   * is a multiple of packTokens.
   */
  void (*packActivations)(const float* x, int ldx, int numTokens, int k, int tokenBegin, int tokenEnd, uint16_t* out);
  /**
   * out[h × keys.count + j] = scale × (q_h · key j) for query heads h < numHeads (q_h at q + h × headDim). Each
   * product is summed on its own, in the order of a plain dot product.
   */
  void (*scores)(const KvRows& keys, const float* q, int numHeads, float scale, float* out);
  /** out[h × headDim + d] = Σ_j p[h × values.count + j] × value j [d], summed in j order, for heads h < numHeads. */
  void (*weightedValues)(const KvRows& values, const float* p, int numHeads, float* out);
  /** dst[i] = float(src[i]) for a row in `dtype`. */
  void (*widen)(DType dtype, const void* src, float* dst, int n);
  /** out = x / sqrt(mean(x²) + eps) × weight (HF LlamaRMSNorm in f32); `out` may alias `x`. */
  void (*rmsNorm)(const float* x, const float* weight, float eps, float* out, int n);
  /** NeoX / HF Llama rotate-half RoPE on one head: x[i], x[i + half] rotated by angle i (cos[i], sin[i]). */
  void (*rope)(float* head, const float* cos, const float* sin, int half);
  /** row[j] = exp(row[j] - max) / Σ_i exp(row[i] - max) for j < n, in place: attention's softmax. */
  void (*softmax)(float* row, int n);
  /** gate[i] = silu(gate[i]) × up[i] = gate[i] / (1 + exp(-gate[i])) × up[i]: the gated MLP's activation. */
  void (*siluMul)(float* gate, const float* up, int n);
  /**
   * Σ exp(x[i] - shift) over the entries of x[0, n) that are not NaN: a row's log-sum-exp (its greedy token's
   * log-probability). Summed in f32 lanes over blocks of 256 entries and in double across blocks.
   */
  double (*sumExp)(const float* x, int n, float shift);
};

const KernelTable* scalarKernels();
#if defined(FERRUM_HAVE_AVX2)
const KernelTable* avx2Kernels();
#endif
#if defined(FERRUM_HAVE_AVX512)
const KernelTable* avx512Kernels();
#endif
#if defined(FERRUM_HAVE_AVX512BF16)
const KernelTable* avx512Bf16Kernels();
#endif
#if defined(FERRUM_HAVE_AMX)
const KernelTable* amxKernels();
#endif
#if defined(FERRUM_HAVE_NEON)
const KernelTable* neonKernels();
#endif

}  // namespace ferrum
