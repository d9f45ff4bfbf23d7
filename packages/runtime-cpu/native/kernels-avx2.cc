// AVX2 + FMA + F16C kernels. Compiled with -mavx2 -mfma -mf16c; only called after cpu-features.cc saw
// those features at run time.
#include <immintrin.h>

#include "kernels-impl.h"

namespace ferrum {
namespace {

struct V256 {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kGemvRows = 4;
  // 16 ymm registers: 2 × 4 accumulators + 4 weight rows + 1 activation row.
  static constexpr int kTileTokens = 2;
  static constexpr int kTileRows = 4;
  // 2 heads × 4 sums + 4 value vectors + a weight.
  static constexpr int kValueHeads = 2;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg broadcast(float v) { return _mm256_set1_ps(v); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static Reg loadBf16(const uint16_t* p) {
    __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
  }
  static Reg loadF16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float reduce(Reg r) {
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
    sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
    sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
    return _mm_cvtss_f32(sum);
  }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  // MINPS / MAXPS return their second operand where either is NaN.
  static Reg min(Reg a, Reg b) { return _mm256_min_ps(a, b); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static float reduceMax(Reg r) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(r), _mm256_extractf128_ps(r, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static Reg roundNearest(Reg r) { return _mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // n added to p's exponent field: p × 2^n while the result stays a normal float.
  static Reg scaleByPow2(Reg p, Reg n) {
    const __m256i shifted = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), shifted));
  }
  static Reg zeroNaN(Reg r) { return _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q)); }
};

}  // namespace

const KernelTable* avx2Kernels() {
  static const KernelTable table = kernels::makeTable<V256>("avx2");
  return &table;
}

}  // namespace ferrum
