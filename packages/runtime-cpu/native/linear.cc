#include "linear.h"

namespace ferrum {
namespace {

// Rows handed out together: a multiple of every kernel's row tile, small enough to balance threads.
constexpr int64_t kRowUnit = 16;
// Up to this many rows the caller packs x itself: a parallel loop's hand-off costs more than the work.
constexpr int kInlinePackTokens = 4;

int64_t unitsOf(const LinearOp& op) { return (op.weight->rows + kRowUnit - 1) / kRowUnit; }

}  // namespace

void runLinears(ThreadPool& pool, const KernelTable& kernels, const float* x, int ldx, int numTokens, uint16_t* packed,
                std::initializer_list<LinearOp> ops) {
  int64_t totalUnits = 0;
  bool bf16 = false;
  for (const LinearOp& op : ops) {
    totalUnits += unitsOf(op);
    bf16 = bf16 || op.weight->dtype == DType::BF16;
  }
  const uint16_t* xPacked = nullptr;
  if (kernels.bf16Products && bf16) {
    const int k = static_cast<int>(ops.begin()->weight->cols);
    if (numTokens <= kInlinePackTokens) {
      kernels.packActivations(x, ldx, numTokens, k, 0, numTokens, packed);
    } else {
      const int unit = kernels.packTokens;
      pool.parallelFor((numTokens + unit - 1) / unit, [&](int64_t begin, int64_t end, int) {
        const int last = static_cast<int>(end) * unit;
        kernels.packActivations(x, ldx, numTokens, k, static_cast<int>(begin) * unit, last < numTokens ? last : numTokens,
                                packed);
      });
    }
    xPacked = packed;
  }
  pool.parallelFor(totalUnits, [&](int64_t begin, int64_t end, int) {
    int64_t base = 0;
    for (const LinearOp& op : ops) {
      const int64_t units = unitsOf(op);
      const int64_t lo = begin > base ? begin : base;
      const int64_t hi = end < base + units ? end : base + units;
      if (lo < hi) {
        const MatmulArgs args{op.weight->dtype, op.weight->data, static_cast<int>(op.weight->cols), x, ldx,
                              op.weight->dtype == DType::BF16 ? xPacked : nullptr, numTokens, op.y, op.ldy,
                              op.accumulate};
        const int64_t rowEnd = (hi - base) * kRowUnit < op.weight->rows ? (hi - base) * kRowUnit : op.weight->rows;
        kernels.matmul(args, static_cast<int>((lo - base) * kRowUnit), static_cast<int>(rowEnd));
      }
      base += units;
    }
  });
}

}  // namespace ferrum
