// Small per-row operations of the transformer graph (baseline code: they are cheap next to the GEMMs).
#pragma once

#include <cstdint>

namespace ferrum {

/** out = x / sqrt(mean(x^2) + eps) * weight (HF LlamaRMSNorm in f32). `out` may alias `x`. */
void rmsNorm(const float* x, const float* weight, float eps, float* out, int n);


/** y[i] += bias[i]. */
void addBias(float* y, const float* bias, int n);

/** NeoX / HF Llama rotate-half RoPE on one head: x[i], x[i + half] rotated by angle i. */
void applyRope(float* head, const float* cos, const float* sin, int half);

/** Index of the first maximum, NaN entries skipped (0 for a row of NaN only): greedy sampling. */
int argmaxSkippingNaN(const float* x, int n);

}  // namespace ferrum
