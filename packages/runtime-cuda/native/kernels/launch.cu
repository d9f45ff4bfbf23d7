// The process-wide PDL switch of launchKernel (launch.cuh), whether the Hopper kernels are built, and the cluster
// residency queries.
#include <algorithm>
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

int queryResidentClusters(const void* kernel, dim3 cluster, int threads, size_t sharedBytes) {
  cudaLaunchAttribute attribute = clusterDimension(cluster);
  cudaLaunchConfig_t config{};
  config.gridDim = cluster;
  config.blockDim = threads;
  config.dynamicSmemBytes = sharedBytes;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  checkCuda(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config), "cudaOccupancyMaxActiveClusters");
  return std::max(clusters, 1);
}

}  // namespace ferrum
