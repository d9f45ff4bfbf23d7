// AVX-512 BF16 kernels: bf16 weights multiplied with vdpbf16ps, which takes two bf16 × bf16 products into each f32
// lane per instruction (twice the f32 FMA's products, and no widening of the weights). x is rounded to bf16 once
// a projection (packActivations), as transformers' bf16 modules receive it. Compiled with the AVX-512 flags and
// -mavx512bf16; only called after cpu-features.cc saw those features at run time. Other weight dtypes take the
// AVX-512 f32 kernels.
#include "simd-avx512.h"

namespace ferrum {
namespace {

constexpr int kVec = 32;  // bf16 elements a 512-bit register holds

// A packed activation row: k rounded up to whole vectors, the padding zero, so the last vector needs no mask.
int paddedK(int k) { return (k + kVec - 1) / kVec * kVec; }

size_t packedElements(int numTokens, int k) { return static_cast<size_t>(numTokens) * static_cast<size_t>(paddedK(k)); }

void packActivations(const float* x, int ldx, int, int k, int tokenBegin, int tokenEnd, uint16_t* out) {
  const size_t kp = static_cast<size_t>(paddedK(k));
  for (int t = tokenBegin; t < tokenEnd; ++t) {
    uint16_t* row = out + static_cast<size_t>(t) * kp;
    rowToBf16(x + static_cast<size_t>(t) * static_cast<size_t>(ldx), k, row);
    std::memset(row + k, 0, sizeof(uint16_t) * (kp - static_cast<size_t>(k)));
  }
}

__m512bh asBf16(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// MT tokens × NR weight rows, each pair with its own accumulator, k in the same order whatever the tile shape, so
// a row's value never depends on the batch around it.
template <int MT, int NR>
inline void tile(const uint16_t* w, int k, const uint16_t* x, size_t kp, float* y, int ldy, bool accumulate) {
  __m512 sum[MT][NR];
  for (int t = 0; t < MT; ++t)
    for (int r = 0; r < NR; ++r) sum[t][r] = _mm512_setzero_ps();
  int kk = 0;
  for (; kk + kVec <= k; kk += kVec) {
    __m512i wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = _mm512_loadu_si512(w + static_cast<size_t>(r) * k + kk);
    for (int t = 0; t < MT; ++t) {
      const __m512bh xv = asBf16(_mm512_loadu_si512(x + t * kp + kk));
      for (int r = 0; r < NR; ++r) sum[t][r] = _mm512_dpbf16_ps(sum[t][r], xv, asBf16(wv[r]));
    }
  }
  if (kk < k) {
    const __mmask32 valid = static_cast<__mmask32>((1ull << (k - kk)) - 1);
    __m512i wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = _mm512_maskz_loadu_epi16(valid, w + static_cast<size_t>(r) * k + kk);
    for (int t = 0; t < MT; ++t) {
      const __m512bh xv = asBf16(_mm512_loadu_si512(x + t * kp + kk));  // zero past k
      for (int r = 0; r < NR; ++r) sum[t][r] = _mm512_dpbf16_ps(sum[t][r], xv, asBf16(wv[r]));
    }
  }
  for (int t = 0; t < MT; ++t) {
    for (int r = 0; r < NR; ++r) {
      const float value = _mm512_reduce_add_ps(sum[t][r]);
      float* out = y + static_cast<size_t>(t) * ldy + r;
      *out = accumulate ? *out + value : value;
    }
  }
}

// `count` tokens against NR rows.
template <int NR>
void rowTile(const uint16_t* w, int k, const uint16_t* x, size_t kp, int count, float* y, int ldy, bool accumulate) {
  constexpr int MT = V512::kTileTokens;
  int t = 0;
  for (; t + MT <= count; t += MT) {
    tile<MT, NR>(w, k, x + t * kp, kp, y + static_cast<size_t>(t) * ldy, ldy, accumulate);
  }
  const uint16_t* xt = x + t * kp;
  float* yt = y + static_cast<size_t>(t) * ldy;
  switch (count - t) {
    case 3:
      tile<3, NR>(w, k, xt, kp, yt, ldy, accumulate);
      break;
    case 2:
      tile<2, NR>(w, k, xt, kp, yt, ldy, accumulate);
      break;
    case 1:
      tile<1, NR>(w, k, xt, kp, yt, ldy, accumulate);
      break;
    default:
      break;
  }
}

void bf16Matmul(const MatmulArgs& a, int rowBegin, int rowEnd) {
  const uint16_t* w = static_cast<const uint16_t*>(a.w);
  const size_t k = static_cast<size_t>(a.k), kp = static_cast<size_t>(paddedK(a.k));
  for (int t0 = 0; t0 < a.numTokens; t0 += kernels::kTokenBlock) {
    const int count = a.numTokens - t0 < kernels::kTokenBlock ? a.numTokens - t0 : kernels::kTokenBlock;
    const uint16_t* x = a.xPacked + t0 * kp;
    float* y = a.y + static_cast<size_t>(t0) * a.ldy;
    int n = rowBegin;
    if (count == 1) {
      constexpr int NR = V512::kGemvRows;
      for (; n + NR <= rowEnd; n += NR) tile<1, NR>(w + n * k, a.k, x, kp, y + n, a.ldy, a.accumulate);
      for (; n < rowEnd; ++n) tile<1, 1>(w + n * k, a.k, x, kp, y + n, a.ldy, a.accumulate);
      continue;
    }
    constexpr int NR = V512::kTileRows;
    for (; n + NR <= rowEnd; n += NR) rowTile<NR>(w + n * k, a.k, x, kp, count, y + n, a.ldy, a.accumulate);
    for (; n < rowEnd; ++n) rowTile<1>(w + n * k, a.k, x, kp, count, y + n, a.ldy, a.accumulate);
  }
}

}  // namespace

const KernelTable* avx512Bf16Kernels() {
  static const KernelTable table =
      kernels::makeBf16Table<V512, &bf16Matmul>("avx512bf16", &packedElements, &packActivations);
  return &table;
}

}  // namespace ferrum
