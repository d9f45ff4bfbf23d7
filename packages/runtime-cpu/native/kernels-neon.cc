// NEON kernels for arm64 (Advanced SIMD is part of the AArch64 baseline, so no run-time check).
#include <arm_neon.h>

#include "kernels-impl.h"

namespace ferrum {
namespace {

struct VNeon {
  using Reg = float32x4_t;
  static constexpr int kWidth = 4;
  static constexpr int kGemvRows = 8;
  static constexpr int kTileTokens = 4;
  static constexpr int kTileRows = 4;
  // 32 q registers: 4 heads × 4 sums + 4 value vectors + a weight.
  static constexpr int kValueHeads = 4;
  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg broadcast(float v) { return vdupq_n_f32(v); }
  static Reg load(const float* p) { return vld1q_f32(p); }
  static Reg loadBf16(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
  static Reg loadF16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static float reduce(Reg r) { return vaddvq_f32(r); }
  static void store(float* p, Reg r) { vst1q_f32(p, r); }
  static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  static Reg sub(Reg a, Reg b) { return vsubq_f32(a, b); }
  static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
  static Reg div(Reg a, Reg b) { return vdivq_f32(a, b); }
  // FMIN / FMAX return NaN where either operand is NaN.
  static Reg min(Reg a, Reg b) { return vminq_f32(a, b); }
  static Reg max(Reg a, Reg b) { return vmaxq_f32(a, b); }
  static float reduceMax(Reg r) { return vmaxvq_f32(r); }
  static Reg roundNearest(Reg r) { return vrndnq_f32(r); }
  // n added to p's exponent field: p × 2^n while the result stays a normal float.
  static Reg scaleByPow2(Reg p, Reg n) {
    return vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(p), vshlq_n_s32(vcvtq_s32_f32(n), 23)));
  }
  static Reg zeroNaN(Reg r) { return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(r), vceqq_f32(r, r))); }
};

}  // namespace

const KernelTable* neonKernels() {
  static const KernelTable table = kernels::makeTable<VNeon>("neon");
  return &table;
}

}  // namespace ferrum
