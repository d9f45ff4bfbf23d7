#include "ops.h"

#include <cmath>

namespace ferrum {

void rmsNorm(const float* x, const float* weight, float eps, float* out, int n) {
  double sumSquares = 0.0;
  for (int i = 0; i < n; ++i) sumSquares += static_cast<double>(x[i]) * x[i];
  const float variance = static_cast<float>(sumSquares / n);
  const float inverse = 1.0f / std::sqrt(variance + eps);
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * inverse);
}

void addBias(float* y, const float* bias, int n) {
  for (int i = 0; i < n; ++i) y[i] += bias[i];
}

void applyRope(float* head, const float* cos, const float* sin, int half) {
  for (int i = 0; i < half; ++i) {
    const float x1 = head[i];
    const float x2 = head[i + half];
    head[i] = x1 * cos[i] - x2 * sin[i];
    head[i + half] = x2 * cos[i] + x1 * sin[i];
  }
}

// NaN entries are skipped, as the host sampler never draws them (a row of NaN only still yields 0).
int argmaxSkippingNaN(const float* x, int n) {
  int best = 0;
  while (best < n - 1 && std::isnan(x[best])) ++best;
  for (int i = best + 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace ferrum
