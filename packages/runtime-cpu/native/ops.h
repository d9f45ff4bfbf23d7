// The per-row operations left in baseline code: Qwen2's biases and the greedy pick, small next to the rest. The others
// (norms, RoPE, softmax, SiLU, log-sum-exp) run on the SIMD path through the kernel table.
#pragma once

#include <cstdint>

namespace ferrum {

/** y[i] += bias[i]. */
void addBias(float* y, const float* bias, int n);


/** Index of the first maximum, NaN entries skipped (0 for a row of NaN only): greedy sampling. */
int argmaxSkippingNaN(const float* x, int n);

}  // namespace ferrum
