// The process-wide PDL switch of launchKernel (launch.cuh).
#include "kernels.h"
#include "launch.cuh"

namespace ferrum {

std::atomic<bool> gProgrammaticLaunch{false};

void setProgrammaticLaunch(bool enabled) { gProgrammaticLaunch.store(enabled, std::memory_order_relaxed); }

}  // namespace ferrum
