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

/**
 * Every op of `ops` on the same `numTokens` rows of x (each of the ops' k columns). On a table with bf16 products,
 * x is first packed into `packed` (room for packedElements(numTokens, k)) when an op's weights are bf16.
 */
void runLinears(ThreadPool& pool, const KernelTable& kernels, const float* x, int ldx, int numTokens, uint16_t* packed,
                std::initializer_list<LinearOp> ops);

}  // namespace ferrum
