// The AVX-512 vector traits of kernels-impl.h, shared by every translation unit compiled with AVX-512 flags
// (kernels-avx512.cc, kernels-avx512bf16.cc, kernels-amx.cc). Include only from such a file: V512 lives in an
// anonymous namespace, so each includer's instantiations keep internal linkage and never reach baseline code.
#pragma once

#include <immintrin.h>

#include "kernels-impl.h"

namespace ferrum {
namespace {

struct V512 {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kGemvRows = 8;
  static constexpr int kTileTokens = 4;
  static constexpr int kTileRows = 4;
  // 32 zmm registers: 4 heads × 4 sums + 4 value vectors + a weight.
  static constexpr int kValueHeads = 4;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg broadcast(float v) { return _mm512_set1_ps(v); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  // bf16 is the top half of an f32: zero-extend to 32 bits and shift left by 16.
  static Reg loadBf16(const uint16_t* p) {
    __m256i half = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
  }
  static Reg loadF16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float reduce(Reg r) { return _mm512_reduce_add_ps(r); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  // MINPS / MAXPS return their second operand where either is NaN.
  static Reg min(Reg a, Reg b) { return _mm512_min_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static float reduceMax(Reg r) { return _mm512_reduce_max_ps(r); }
  static Reg roundNearest(Reg r) { return _mm512_roundscale_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static Reg scaleByPow2(Reg p, Reg n) { return _mm512_scalef_ps(p, n); }
  static Reg zeroNaN(Reg r) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r); }
};

// 16 floats to bf16 exactly as f32ToBf16 rounds them (nearest even, NaN kept quiet), with integer operations:
// the bf16 conversion instructions flush subnormals, which torch's cast does not.
inline __m256i roundToBf16(__m512 values) {
  const __m512i bits = _mm512_castps_si512(values);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x400000));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_mask_blend_epi32(nan, rounded, quiet), 16));
}

// x[0, n) to bf16 at out[0, n).
inline void rowToBf16(const float* x, int n, uint16_t* out) {
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), roundToBf16(_mm512_loadu_ps(x + i)));
  }
  for (; i < n; ++i) out[i] = f32ToBf16(x[i]);
}

}  // namespace
}  // namespace ferrum
