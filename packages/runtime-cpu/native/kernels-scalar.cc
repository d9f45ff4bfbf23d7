// Portable kernels for any CPU, written with GCC/Clang vector extensions over 8 floats so the compiler
// maps them to whatever the baseline offers (two SSE2 registers on x86-64). Used when no better variant is
// available or when forced.
#include "kernels-impl.h"

namespace ferrum {
namespace {

typedef float Float8 __attribute__((vector_size(32)));
typedef uint32_t Uint8 __attribute__((vector_size(32)));
typedef uint16_t Half8 __attribute__((vector_size(16)));

struct VScalar {
  using Reg = Float8;
  static constexpr int kWidth = 8;
  static constexpr int kGemvRows = 4;
  static constexpr int kTileTokens = 2;
  static constexpr int kTileRows = 4;
  static Reg zero() { return Reg{}; }
  static Reg broadcast(float value) { return Reg{} + value; }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  static Reg loadBf16(const uint16_t* p) {
    Half8 half;
    std::memcpy(&half, p, sizeof half);
    const Uint8 wide = __builtin_convertvector(half, Uint8) << 16;
    Reg r;
    std::memcpy(&r, &wide, sizeof r);
    return r;
  }
  static Reg loadF16(const uint16_t* p) {
    Reg r;
    for (int i = 0; i < kWidth; ++i) r[i] = f16ToF32(p[i]);
    return r;
  }
  // Separate multiply and add (no fused rounding): the baseline has no FMA instruction.
  static Reg fma(Reg a, Reg b, Reg c) { return a * b + c; }
  static float reduce(Reg r) { return ((r[0] + r[4]) + (r[2] + r[6])) + ((r[1] + r[5]) + (r[3] + r[7])); }
  static void store(float* p, Reg r) { std::memcpy(p, &r, sizeof r); }
};

}  // namespace

const KernelTable* scalarKernels() {
  static const KernelTable table = kernels::makeTable<VScalar>("scalar");
  return &table;
}

}  // namespace ferrum
