// Portable kernels for any CPU: plain loops over 8-float blocks that the compiler may vectorize with the
// baseline instruction set (SSE2 on x86-64). Used when no better variant is available or when forced.
#include "kernels-impl.h"

namespace ferrum {
namespace {

struct VScalar {
  struct Reg {
    float v[8];
  };
  static constexpr int kWidth = 8;
  static constexpr int kGemvRows = 4;
  static constexpr int kTileTokens = 2;
  static constexpr int kTileRows = 4;
  static Reg zero() { return Reg{}; }
  static Reg broadcast(float value) {
    Reg r;
    for (float& lane : r.v) lane = value;
    return r;
  }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(r.v, p, sizeof r.v);
    return r;
  }
  static Reg loadBf16(const uint16_t* p) {
    Reg r;
    for (int i = 0; i < kWidth; ++i) r.v[i] = bf16ToF32(p[i]);
    return r;
  }
  static Reg loadF16(const uint16_t* p) {
    Reg r;
    for (int i = 0; i < kWidth; ++i) r.v[i] = f16ToF32(p[i]);
    return r;
  }
  // Separate multiply and add (no fused rounding): the baseline has no FMA instruction.
  static Reg fma(const Reg& a, const Reg& b, const Reg& c) {
    Reg r;
    for (int i = 0; i < kWidth; ++i) r.v[i] = a.v[i] * b.v[i] + c.v[i];
    return r;
  }
  static float reduce(const Reg& r) {
    return ((r.v[0] + r.v[4]) + (r.v[2] + r.v[6])) + ((r.v[1] + r.v[5]) + (r.v[3] + r.v[7]));
  }
  static void store(float* p, const Reg& r) { std::memcpy(p, r.v, sizeof r.v); }
};

}  // namespace

const KernelTable* scalarKernels() {
  static const KernelTable table = kernels::makeTable<VScalar>("scalar");
  return &table;
}

}  // namespace ferrum
