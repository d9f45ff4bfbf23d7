#include "ops.h"

#include <cmath>

namespace ferrum {

void addBias(float* y, const float* bias, int n) {
  for (int i = 0; i < n; ++i) y[i] += bias[i];
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
