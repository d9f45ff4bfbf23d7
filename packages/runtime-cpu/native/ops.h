// Small per-row operations of the transformer graph (baseline code: they are cheap next to the GEMMs).
#pragma once

#include <cstdint>

namespace ferrum {



/** y[i] += bias[i]. */
void addBias(float* y, const float* bias, int n);


/** Index of the first maximum, NaN entries skipped (0 for a row of NaN only): greedy sampling. */
int argmaxSkippingNaN(const float* x, int n);

}  // namespace ferrum
