// Portable kernels for any CPU, written with GCC/Clang vector extensions over 8 floats so the compiler
// maps them to whatever the baseline offers (two SSE2 registers on x86-64). Used when no better variant is
// available or when forced.
#include "kernels-impl.h"

namespace ferrum {
namespace {

typedef float Float8 __attribute__((vector_size(32)));
typedef uint32_t Uint8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));
typedef uint16_t Half8 __attribute__((vector_size(16)));

struct VScalar {
  using Reg = Float8;
  static constexpr int kWidth = 8;
  static constexpr int kGemvRows = 4;
  static constexpr int kTileTokens = 2;
  static constexpr int kTileRows = 4;
  // Each Reg takes two of the baseline's 16 xmm registers: 4 sums and 4 value vectors fill them.
  static constexpr int kValueHeads = 1;
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
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg mul(Reg a, Reg b) { return a * b; }
  static Reg div(Reg a, Reg b) { return a / b; }
  static Reg min(Reg a, Reg b) {
    for (int i = 0; i < kWidth; ++i) a[i] = a[i] < b[i] ? a[i] : b[i];
    return a;
  }
  static Reg max(Reg a, Reg b) {
    for (int i = 0; i < kWidth; ++i) a[i] = a[i] > b[i] ? a[i] : b[i];
    return a;
  }
  static float reduceMax(Reg r) {
    float m = r[0];
    for (int i = 1; i < kWidth; ++i) m = r[i] > m ? r[i] : m;
    return m;
  }
  // Adding and subtracting 1.5 × 2^23 rounds |r| < 2^22 to an integer in the current (nearest-even) rounding mode.
  static Reg roundNearest(Reg r) {
    constexpr float kShifter = 12582912.0f;
    return (r + kShifter) - kShifter;
  }
  // n added to p's exponent field: p × 2^n while the result stays a normal float.
  static Reg scaleByPow2(Reg p, Reg n) {
    Uint8 bits;
    std::memcpy(&bits, &p, sizeof bits);
    const Int8 exponent = __builtin_convertvector(n, Int8);
    Uint8 shift;
    std::memcpy(&shift, &exponent, sizeof shift);
    bits += shift << 23;
    std::memcpy(&p, &bits, sizeof p);
    return p;
  }
  static Reg zeroNaN(Reg r) {
    for (int i = 0; i < kWidth; ++i) r[i] = r[i] == r[i] ? r[i] : 0.0f;
    return r;
  }
};

}  // namespace

const KernelTable* scalarKernels() {
  static const KernelTable table = kernels::makeTable<VScalar>("scalar");
  return &table;
}

}  // namespace ferrum
