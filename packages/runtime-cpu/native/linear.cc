#include "linear.h"

namespace ferrum {
namespace {

// Rows handed out together: a multiple of every kernel's row tile, small enough to balance threads.
constexpr int64_t kRowUnit = 16;

int64_t unitsOf(const LinearOp& op) { return (op.weight->rows + kRowUnit - 1) / kRowUnit; }

}  // namespace

void runLinears(ThreadPool& pool, const KernelTable& kernels, const float* x, int ldx, int numTokens,
                std::initializer_list<LinearOp> ops) {
  int64_t totalUnits = 0;
  for (const LinearOp& op : ops) totalUnits += unitsOf(op);
  pool.parallelFor(totalUnits, [&](int64_t begin, int64_t end, int) {
    int64_t base = 0;
    for (const LinearOp& op : ops) {
      const int64_t units = unitsOf(op);
      const int64_t lo = begin > base ? begin : base;
      const int64_t hi = end < base + units ? end : base + units;
      if (lo < hi) {
        const MatmulArgs args{op.weight->dtype, op.weight->data, static_cast<int>(op.weight->cols), x, ldx,
                              numTokens, op.y, op.ldy, op.accumulate};
        const int64_t rowEnd = (hi - base) * kRowUnit < op.weight->rows ? (hi - base) * kRowUnit : op.weight->rows;
        kernels.matmul(args, static_cast<int>((lo - base) * kRowUnit), static_cast<int>(rowEnd));
      }
      base += units;
    }
  });
}

}  // namespace ferrum
