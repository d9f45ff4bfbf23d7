// Kernel bodies shared by every instruction-set variant, written once over a vector traits type `V`.
// Include only from a kernels-<isa>.cc file that defines `V` in an anonymous namespace: template
// instantiations over an internal type have internal linkage, so code compiled with -mavx512f can never
// be merged into (and then executed by) the baseline build. No standard library beyond memcpy here.
//
// V provides: Reg, kWidth (floats per Reg), kGemvRows (rows per tile when one token), kTileTokens and
// kTileRows (tile shape for several tokens), kValueHeads (heads weightedValues sums at once), zero(),
// load(const float*), loadBf16(const uint16_t*), loadF16(const uint16_t*), fma(a, b, c) = a * b + c,
// reduce(Reg) -> float, store(float*, Reg),
// broadcast(float), add(a, b), sub(a, b), mul(a, b), div(a, b), min(a, b) and max(a, b) (b returned where b is NaN),
// reduceMax(Reg) -> float, roundNearest(Reg) (to the nearest integer, ties to even), scaleByPow2(p, n) = p × 2^n
// for integral n in [-126, 127] and zeroNaN(Reg) (NaN lanes to 0).
#pragma once

#include <cstring>

#include "dtype.h"
#include "kernels.h"

namespace ferrum {
namespace kernels {

// Tokens processed per pass over a row tile: keeps that many activation rows hot in L2 while the
// weight tile (kTileRows × k elements) stays in L1.
constexpr int kTokenBlock = 32;

template <class V>
struct LoadF32 {
  using Elem = float;
  static typename V::Reg load(const Elem* p) { return V::load(p); }
};
template <class V>
struct LoadBf16 {
  using Elem = uint16_t;
  static typename V::Reg load(const Elem* p) { return V::loadBf16(p); }
};
template <class V>
struct LoadF16 {
  using Elem = uint16_t;
  static typename V::Reg load(const Elem* p) { return V::loadF16(p); }
};

// Loads the last `count` (< kWidth) elements through a zero-padded copy.
template <class V, class L>
static inline typename V::Reg loadPartial(const typename L::Elem* p, int count) {
  typename L::Elem padded[V::kWidth];
  std::memset(padded, 0, sizeof padded);
  std::memcpy(padded, p, sizeof(typename L::Elem) * static_cast<size_t>(count));
  return L::load(padded);
}

// How a tile multiplies: f32 products of V (weights widened by L), or a table's own products (bf16 × bf16). P
// provides W and X (weight and activation elements), Acc, WReg, XReg, kStep (k a multiply-add takes), the tile
// shapes kGemvRows, kTileTokens and kTileRows, zero(), loadW/loadX(p) and loadWPartial/loadXPartial(p, count) (the
// last count < kStep elements, zeros after), madd(x, w, acc) and reduce(Acc) -> float.
template <class V, class L>
struct F32Products {
  using W = typename L::Elem;
  using X = float;
  using Acc = typename V::Reg;
  using WReg = Acc;
  using XReg = Acc;
  static constexpr int kStep = V::kWidth;
  static constexpr int kGemvRows = V::kGemvRows;
  static constexpr int kTileTokens = V::kTileTokens;
  static constexpr int kTileRows = V::kTileRows;
  static Acc zero() { return V::zero(); }
  static WReg loadW(const W* p) { return L::load(p); }
  static WReg loadWPartial(const W* p, int count) { return loadPartial<V, L>(p, count); }
  static XReg loadX(const X* p) { return V::load(p); }
  static XReg loadXPartial(const X* p, int count) { return loadPartial<V, LoadF32<V>>(p, count); }
  static Acc madd(XReg x, WReg w, Acc acc) { return V::fma(x, w, acc); }
  static float reduce(Acc acc) { return V::reduce(acc); }
};

// One MT × NR tile: MT tokens against NR weight rows, each (token, row) pair with its own accumulator
// (which is what makes results independent of the tile shape).
template <class P, int MT, int NR>
static inline void tile(const typename P::W* w, int k, const typename P::X* x, size_t ldx, float* y, int ldy,
                        bool accumulate) {
  typename P::Acc sum[MT][NR];
  for (int t = 0; t < MT; ++t)
    for (int r = 0; r < NR; ++r) sum[t][r] = P::zero();
  int kk = 0;
  for (; kk + P::kStep <= k; kk += P::kStep) {
    typename P::WReg wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = P::loadW(w + static_cast<size_t>(r) * k + kk);
    for (int t = 0; t < MT; ++t) {
      const typename P::XReg xv = P::loadX(x + t * ldx + kk);
      for (int r = 0; r < NR; ++r) sum[t][r] = P::madd(xv, wv[r], sum[t][r]);
    }
  }
  if (kk < k) {
    const int rest = k - kk;
    typename P::WReg wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = P::loadWPartial(w + static_cast<size_t>(r) * k + kk, rest);
    for (int t = 0; t < MT; ++t) {
      const typename P::XReg xv = P::loadXPartial(x + t * ldx + kk, rest);
      for (int r = 0; r < NR; ++r) sum[t][r] = P::madd(xv, wv[r], sum[t][r]);
    }
  }
  for (int t = 0; t < MT; ++t) {
    for (int r = 0; r < NR; ++r) {
      float value = P::reduce(sum[t][r]);
      float* out = y + static_cast<size_t>(t) * ldy + r;
      *out = accumulate ? *out + value : value;
    }
  }
}

// All `numTokens` tokens against NR rows starting at `w`.
template <class P, int NR>
static inline void rowTile(const typename P::W* w, int k, const typename P::X* x, size_t ldx, int numTokens, float* y,
                           int ldy, bool accumulate) {
  constexpr int MT = P::kTileTokens;
  int t = 0;
  for (; t + MT <= numTokens; t += MT) {
    tile<P, MT, NR>(w, k, x + t * ldx, ldx, y + static_cast<size_t>(t) * ldy, ldy, accumulate);
  }
  const typename P::X* xt = x + t * ldx;
  float* yt = y + static_cast<size_t>(t) * ldy;
  switch (numTokens - t) {
    case 3:
      tile<P, 3, NR>(w, k, xt, ldx, yt, ldy, accumulate);
      break;
    case 2:
      tile<P, 2, NR>(w, k, xt, ldx, yt, ldy, accumulate);
      break;
    case 1:
      tile<P, 1, NR>(w, k, xt, ldx, yt, ldy, accumulate);
      break;
    default:
      break;
  }
}

// Rows [rowBegin, rowEnd) of the product of `a`'s weights (elements P::W) by the activations x (rows ldx apart).
template <class P>
static void matmulTiles(const MatmulArgs& a, const typename P::X* x, size_t ldx, int rowBegin, int rowEnd) {
  const typename P::W* w = static_cast<const typename P::W*>(a.w);
  const size_t k = static_cast<size_t>(a.k);
  for (int t0 = 0; t0 < a.numTokens; t0 += kTokenBlock) {
    const int count = a.numTokens - t0 < kTokenBlock ? a.numTokens - t0 : kTokenBlock;
    const typename P::X* xb = x + t0 * ldx;
    float* y = a.y + static_cast<size_t>(t0) * a.ldy;
    int n = rowBegin;
    if (count == 1) {
      // Decode (GEMV): more rows per tile for more independent streams; bandwidth bound.
      constexpr int NR = P::kGemvRows;
      for (; n + NR <= rowEnd; n += NR) tile<P, 1, NR>(w + n * k, a.k, xb, ldx, y + n, a.ldy, a.accumulate);
      for (; n < rowEnd; ++n) tile<P, 1, 1>(w + n * k, a.k, xb, ldx, y + n, a.ldy, a.accumulate);
      continue;
    }
    constexpr int NR = P::kTileRows;
    for (; n + NR <= rowEnd; n += NR) rowTile<P, NR>(w + n * k, a.k, xb, ldx, count, y + n, a.ldy, a.accumulate);
    for (; n < rowEnd; ++n) rowTile<P, 1>(w + n * k, a.k, xb, ldx, count, y + n, a.ldy, a.accumulate);
  }
}

template <class V>
static void matmul(const MatmulArgs& args, int rowBegin, int rowEnd) {
  const size_t ldx = static_cast<size_t>(args.ldx);
  switch (args.dtype) {
    case DType::F32:
      matmulTiles<F32Products<V, LoadF32<V>>>(args, args.x, ldx, rowBegin, rowEnd);
      break;
    case DType::BF16:
      matmulTiles<F32Products<V, LoadBf16<V>>>(args, args.x, ldx, rowBegin, rowEnd);
      break;
    case DType::F16:
      matmulTiles<F32Products<V, LoadF16<V>>>(args, args.x, ldx, rowBegin, rowEnd);
      break;
  }
}

// Keys `scores` multiplies together: independent sums in flight, each still a plain dot product of its own.
constexpr int kScoreKeys = 4;
// Vectors of a head's dims `weightedValues` accumulates in registers over all the values, for V::kValueHeads heads
// at once (each value vector loaded once for all of them).
constexpr int kValueVectors = 4;

// out[r] = q · rows[r] over n floats, for R rows: per row the fused multiply-adds of a dot product, then its reduce.
template <class V, int R>
static inline void dotRows(const float* q, const float* const (&rows)[R], int n, float (&out)[R]) {
  using Reg = typename V::Reg;
  Reg sum[R];
  for (int r = 0; r < R; ++r) sum[r] = V::zero();
  int i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) {
    const Reg qv = V::load(q + i);
    for (int r = 0; r < R; ++r) sum[r] = V::fma(qv, V::load(rows[r] + i), sum[r]);
  }
  if (i < n) {
    const Reg qv = loadPartial<V, LoadF32<V>>(q + i, n - i);
    for (int r = 0; r < R; ++r) sum[r] = V::fma(qv, loadPartial<V, LoadF32<V>>(rows[r] + i, n - i), sum[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = V::reduce(sum[r]);
}

// Scores of keys [j, j + R) against every head.
template <class V, int R>
static inline void scoreKeys(const KvRows& keys, int j, const float* q, int numHeads, float scale, float* out) {
  const float* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = keys.base + static_cast<size_t>(keys.slots[j + r]) * keys.stride;
  for (int h = 0; h < numHeads; ++h) {
    float sums[R];
    dotRows<V, R>(q + static_cast<size_t>(h) * keys.headDim, rows, keys.headDim, sums);
    for (int r = 0; r < R; ++r) out[static_cast<size_t>(h) * keys.count + j + r] = sums[r] * scale;
  }
}

template <class V>
static void scores(const KvRows& keys, const float* q, int numHeads, float scale, float* out) {
  int j = 0;
  for (; j + kScoreKeys <= keys.count; j += kScoreKeys) scoreKeys<V, kScoreKeys>(keys, j, q, numHeads, scale, out);
  for (; j < keys.count; ++j) scoreKeys<V, 1>(keys, j, q, numHeads, scale, out);
}

// B vectors of dims [d, d + B × kWidth) of H heads (weights p + h × count, outputs out + h × headDim): accumulated
// in registers over every value row, in j order.
template <class V, int H, int B>
static inline void weightedSlice(const KvRows& values, const float* p, int d, float* out) {
  using Reg = typename V::Reg;
  Reg acc[H][B];
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < B; ++b) acc[h][b] = V::zero();
  for (int j = 0; j < values.count; ++j) {
    const float* row = values.base + static_cast<size_t>(values.slots[j]) * values.stride + d;
    Reg v[B];
    for (int b = 0; b < B; ++b) v[b] = V::load(row + b * V::kWidth);
    for (int h = 0; h < H; ++h) {
      const Reg weight = V::broadcast(p[static_cast<size_t>(h) * values.count + j]);
      for (int b = 0; b < B; ++b) acc[h][b] = V::fma(weight, v[b], acc[h][b]);
    }
  }
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < B; ++b) V::store(out + static_cast<size_t>(h) * values.headDim + d + b * V::kWidth, acc[h][b]);
}

// The whole vectors of H heads' dims.
template <class V, int H>
static inline void weightedHeads(const KvRows& values, const float* p, float* out) {
  const int n = values.headDim;
  int d = 0;
  for (; d + kValueVectors * V::kWidth <= n; d += kValueVectors * V::kWidth) {
    weightedSlice<V, H, kValueVectors>(values, p, d, out);
  }
  for (; d + V::kWidth <= n; d += V::kWidth) weightedSlice<V, H, 1>(values, p, d, out);
}

template <class V>
static void weightedValues(const KvRows& values, const float* p, int numHeads, float* out) {
  const int n = values.headDim;
  const size_t count = static_cast<size_t>(values.count);
  int h = 0;
  for (; h + V::kValueHeads <= numHeads; h += V::kValueHeads) {
    weightedHeads<V, V::kValueHeads>(values, p + h * count, out + static_cast<size_t>(h) * n);
  }
  for (; h < numHeads; ++h) weightedHeads<V, 1>(values, p + h * count, out + static_cast<size_t>(h) * n);
  for (h = 0; h < numHeads; ++h) {
    const float* ph = p + h * count;
    float* oh = out + static_cast<size_t>(h) * n;
    for (int d = n / V::kWidth * V::kWidth; d < n; ++d) {
      float acc = 0.0f;
      for (int j = 0; j < values.count; ++j) {
        acc += ph[j] * values.base[static_cast<size_t>(values.slots[j]) * values.stride + d];
      }
      oh[d] = acc;
    }
  }
}

template <class V>
static void widen(DType dtype, const void* src, float* dst, int n) {
  int i = 0;
  switch (dtype) {
    case DType::F32:
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(n));
      return;
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (; i + V::kWidth <= n; i += V::kWidth) V::store(dst + i, V::loadBf16(s + i));
      for (; i < n; ++i) dst[i] = bf16ToF32(s[i]);
      return;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (; i + V::kWidth <= n; i += V::kWidth) V::store(dst + i, V::loadF16(s + i));
      for (; i < n; ++i) dst[i] = f16ToF32(s[i]);
      return;
    }
  }
}

// e^x in every lane, within ~1 ulp of the exact value: 2^n × e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2
// in two parts, so that n ln 2 is exact), e^r by its Taylor series to r^7 (|r| <= ln 2 / 2 leaves the next term
// below 1e-8 of it). x is held in [-87.3, 88.3], where 2^n stays a normal float: e^x is then ~1e-38 below the range
// (not 0 or a subnormal) and ~2e38 above it (not infinity). NaN stays NaN.
template <class V>
static inline typename V::Reg exp(typename V::Reg x) {
  using Reg = typename V::Reg;
  x = V::min(V::broadcast(88.3f), V::max(V::broadcast(-87.3f), x));
  const Reg n = V::roundNearest(V::mul(x, V::broadcast(1.44269504f)));
  Reg r = V::fma(n, V::broadcast(-0.693359375f), x);
  r = V::fma(n, V::broadcast(2.12194440e-4f), r);
  Reg p = V::broadcast(1.0f / 5040);
  p = V::fma(p, r, V::broadcast(1.0f / 720));
  p = V::fma(p, r, V::broadcast(1.0f / 120));
  p = V::fma(p, r, V::broadcast(1.0f / 24));
  p = V::fma(p, r, V::broadcast(1.0f / 6));
  p = V::fma(p, r, V::broadcast(0.5f));
  p = V::fma(p, r, V::broadcast(1.0f));
  p = V::fma(p, r, V::broadcast(1.0f));
  return V::scaleByPow2(p, n);
}

// The vector of p[at, at + kWidth), zero-padded past n (the row's end).
template <class V>
static inline typename V::Reg loadUpTo(const float* p, int at, int n) {
  return at + V::kWidth <= n ? V::load(p + at) : loadPartial<V, LoadF32<V>>(p + at, n - at);
}

// Applies `f` (Reg, offset -> Reg) to x[0, n) into out[0, n); the last n % kWidth elements through a zero-padded
// vector.
template <class V, class F>
static inline void mapRow(const float* x, float* out, int n, F f) {
  int i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(out + i, f(V::load(x + i), i));
  if (i < n) {
    float padded[V::kWidth];
    V::store(padded, f(loadPartial<V, LoadF32<V>>(x + i, n - i), i));
    std::memcpy(out + i, padded, sizeof(float) * static_cast<size_t>(n - i));
  }
}

template <class V>
static void softmax(float* row, int n) {
  using Reg = typename V::Reg;
  float max = row[0];
  int i = 0;
  if (n >= V::kWidth) {
    Reg m = V::load(row);
    for (i = V::kWidth; i + V::kWidth <= n; i += V::kWidth) m = V::max(m, V::load(row + i));
    max = V::reduceMax(m);
  }
  for (; i < n; ++i) max = row[i] > max ? row[i] : max;
  const Reg shift = V::broadcast(-max);
  // The whole vectors are summed as vectors; the tail (whose padded lanes hold exp(-max)) from the stored row.
  const int whole = n / V::kWidth * V::kWidth;
  Reg sum = V::zero();
  mapRow<V>(row, row, n, [&](Reg x, int at) {
    const Reg e = exp<V>(V::add(x, shift));
    if (at < whole) sum = V::add(sum, e);
    return e;
  });
  float total = V::reduce(sum);
  for (int j = whole; j < n; ++j) total += row[j];
  const Reg inverse = V::broadcast(1.0f / total);
  mapRow<V>(row, row, n, [&](Reg x, int) { return V::mul(x, inverse); });
}

template <class V>
static void rmsNorm(const float* x, const float* weight, float eps, float* out, int n) {
  using Reg = typename V::Reg;
  Reg squares = V::zero();
  int i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) squares = V::fma(V::load(x + i), V::load(x + i), squares);
  if (i < n) {
    const Reg v = loadPartial<V, LoadF32<V>>(x + i, n - i);
    squares = V::fma(v, v, squares);
  }
  // __builtin_sqrtf: no library symbol, which code built with these flags could lend to baseline code.
  const float inverse = 1.0f / __builtin_sqrtf(V::reduce(squares) / static_cast<float>(n) + eps);
  const Reg scale = V::broadcast(inverse);
  mapRow<V>(x, out, n, [&](Reg v, int at) {
    return V::mul(loadUpTo<V>(weight, at, n), V::mul(v, scale));
  });
}

template <class V>
static void rope(float* head, const float* cos, const float* sin, int half) {
  using Reg = typename V::Reg;
  int i = 0;
  for (; i + V::kWidth <= half; i += V::kWidth) {
    const Reg x1 = V::load(head + i), x2 = V::load(head + half + i);
    const Reg c = V::load(cos + i), s = V::load(sin + i);
    V::store(head + i, V::sub(V::mul(x1, c), V::mul(x2, s)));
    V::store(head + half + i, V::add(V::mul(x2, c), V::mul(x1, s)));
  }
  for (; i < half; ++i) {
    const float x1 = head[i], x2 = head[i + half];
    head[i] = x1 * cos[i] - x2 * sin[i];
    head[i + half] = x2 * cos[i] + x1 * sin[i];
  }
}

template <class V>
static void siluMul(float* gate, const float* up, int n) {
  using Reg = typename V::Reg;
  const Reg one = V::broadcast(1.0f);
  mapRow<V>(gate, gate, n, [&](Reg g, int at) {
    return V::mul(V::div(g, V::add(one, exp<V>(V::mul(g, V::broadcast(-1.0f))))), loadUpTo<V>(up, at, n));
  });
}

template <class V>
static double sumExp(const float* x, int n, float shift) {
  using Reg = typename V::Reg;
  constexpr int kBlock = 256;
  const Reg minus = V::broadcast(-shift);
  double total = 0.0;
  for (int b = 0; b < n; b += kBlock) {
    const int end = b + kBlock < n ? b + kBlock : n;
    Reg sum = V::zero();
    int i = b;
    for (; i + V::kWidth <= end; i += V::kWidth) sum = V::add(sum, V::zeroNaN(exp<V>(V::add(V::load(x + i), minus))));
    float part = V::reduce(sum);
    if (i < end) {
      float tail[V::kWidth];
      V::store(tail, V::zeroNaN(exp<V>(V::add(loadPartial<V, LoadF32<V>>(x + i, end - i), minus))));
      for (int j = 0; j < end - i; ++j) part += tail[j];
    }
    total += part;
  }
  return total;
}

template <class V>
static KernelTable makeTable(const char* name) {
  return KernelTable{name,    false,      1,          1,
                     &matmul<V>, nullptr, nullptr, &scores<V>,
                     &weightedValues<V>, &widen<V>, &rmsNorm<V>, &rope<V>, &softmax<V>, &siluMul<V>, &sumExp<V>};
}

// bf16 weights to `Bf16` (bf16 products on packed activations), other dtypes to V's f32 kernels.
template <class V, void (*Bf16)(const MatmulArgs&, int, int)>
static void matmulBf16Products(const MatmulArgs& args, int rowBegin, int rowEnd) {
  if (args.dtype == DType::BF16) {
    Bf16(args, rowBegin, rowEnd);
  } else {
    matmul<V>(args, rowBegin, rowEnd);
  }
}

// A table with bf16 products: `Bf16` multiplies bf16 weights (k a multiple of kMultiple) by activations `pack` left
// (in ranges of packTokens tokens) as `packedElements` says.
template <class V, void (*Bf16)(const MatmulArgs&, int, int)>
static KernelTable makeBf16Table(const char* name, int kMultiple, int packTokens, size_t (*packedElements)(int, int),
                                 void (*pack)(const float*, int, int, int, int, int, uint16_t*)) {
  return KernelTable{name,    true,       kMultiple,  packTokens,
                     &matmulBf16Products<V, Bf16>, packedElements, pack, &scores<V>,
                     &weightedValues<V>, &widen<V>, &rmsNorm<V>, &rope<V>, &softmax<V>, &siluMul<V>, &sumExp<V>};
}

}  // namespace kernels
}  // namespace ferrum
