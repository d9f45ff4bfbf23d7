// AVX-512 BF16 kernels: bf16 weights multiplied with vdpbf16ps, which takes two bf16 × bf16 products into each f32
// lane per instruction (twice the f32 FMA's products, and no widening of the weights). x is rounded to bf16 once
// a projection (packActivations), as transformers' bf16 modules receive it. Compiled with the AVX-512 flags and
// -mavx512bf16; only called after cpu-features.cc saw those features at run time. Other weight dtypes take the
// AVX-512 f32 kernels.
#include "simd-avx512.h"

namespace ferrum {
namespace {

// Packed activations: rows of k bf16, one after another.
size_t packedElements(int numTokens, int k) { return static_cast<size_t>(numTokens) * static_cast<size_t>(k); }

void packActivations(const float* x, int ldx, int, int k, int tokenBegin, int tokenEnd, uint16_t* out) {
  for (int t = tokenBegin; t < tokenEnd; ++t) {
    rowToBf16(x + static_cast<size_t>(t) * static_cast<size_t>(ldx), k, out + static_cast<size_t>(t) * k);
  }
}

__m512bh asBf16(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// kernels::tile's products: 32 bf16 of a weight row and of a packed activation row a step, into 16 f32 lanes.
struct Bf16Products {
  using W = uint16_t;
  using X = uint16_t;
  using Acc = __m512;
  using WReg = __m512bh;
  using XReg = __m512bh;
  static constexpr int kStep = 32;
  static constexpr int kGemvRows = V512::kGemvRows;
  static constexpr int kTileTokens = V512::kTileTokens;
  static constexpr int kTileRows = V512::kTileRows;
  static Acc zero() { return _mm512_setzero_ps(); }
  static WReg loadW(const W* p) { return asBf16(_mm512_loadu_si512(p)); }
  static WReg loadWPartial(const W* p, int count) {
    return asBf16(_mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << count) - 1), p));
  }
  static XReg loadX(const X* p) { return loadW(p); }
  static XReg loadXPartial(const X* p, int count) { return loadWPartial(p, count); }
  static Acc madd(XReg x, WReg w, Acc acc) { return _mm512_dpbf16_ps(acc, x, w); }
  static float reduce(Acc acc) { return _mm512_reduce_add_ps(acc); }
};

void bf16Matmul(const MatmulArgs& a, int rowBegin, int rowEnd) {
  kernels::matmulTiles<Bf16Products>(a, a.xPacked, static_cast<size_t>(a.k), rowBegin, rowEnd);
}

}  // namespace

const KernelTable* avx512Bf16Kernels() {
  static const KernelTable table =
      kernels::makeBf16Table<V512, &bf16Matmul>("avx512bf16", 1, 1, &packedElements, &packActivations);
  return &table;
}

}  // namespace ferrum
