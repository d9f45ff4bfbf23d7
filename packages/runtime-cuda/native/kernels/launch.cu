// The process-wide PDL switch of launchKernel (launch.cuh), and whether the Hopper kernels are built.
#include <string>

#include "kernels.h"
#include "launch.cuh"

namespace ferrum {

std::atomic<bool> gProgrammaticLaunch{false};

void setProgrammaticLaunch(bool enabled) { gProgrammaticLaunch.store(enabled, std::memory_order_relaxed); }

bool hopperKernelsBuilt(int device) {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  return major == 9 && std::string(" " FERRUM_CUDA_ARCHS).find(" 90a") != std::string::npos;
}

}  // namespace ferrum
