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
  static Reg zero() { return vdupq_n_f32(0.0f); }
  static Reg broadcast(float v) { return vdupq_n_f32(v); }
  static Reg load(const float* p) { return vld1q_f32(p); }
  static Reg loadBf16(const uint16_t* p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }
  static Reg loadF16(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static Reg fma(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static float reduce(Reg r) { return vaddvq_f32(r); }
  static void store(float* p, Reg r) { vst1q_f32(p, r); }
};

}  // namespace

const KernelTable* neonKernels() {
  static const KernelTable table = kernels::makeTable<VNeon>("neon");
  return &table;
}

}  // namespace ferrum
