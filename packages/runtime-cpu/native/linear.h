// Runs one or more projections that read the same activations as a single parallel loop, so that q/k/v
// (or gate/up) share one dispatch and the threads split their combined rows evenly.
#pragma once

#include <initializer_list>

#include "kernels.h"
#include "model-weights.h"
#include "thread-pool.h"

namespace ferrum {

/** y[t * ldy + n] (+)= x[t] · weight[n] for every row n of `weight`. */
struct LinearOp {
  const Tensor* weight;
  float* y;
  int ldy;
  bool accumulate;
};

void runLinears(ThreadPool& pool, const KernelTable& kernels, const float* x, int ldx, int numTokens,
                std::initializer_list<LinearOp> ops);

}  // namespace ferrum
