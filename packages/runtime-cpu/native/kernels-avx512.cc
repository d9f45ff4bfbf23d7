// AVX-512 (F, BW, VL, DQ) kernels. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c;
// only called after cpu-features.cc saw those features at run time.
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
};

}  // namespace

const KernelTable* avx512Kernels() {
  static const KernelTable table = kernels::makeTable<V512>("avx512");
  return &table;
}

}  // namespace ferrum
