// Kernel launches with programmatic dependent launch (PDL, Hopper and later). Without it a kernel starts only
// after the one before it in the stream has drained, so each of the ~10 launches a layer pays the drain, the
// launch and the ramp-up with the GPU partly idle; at decode batch sizes that is a large share of a step.
// With it the next kernel's blocks start as soon as this one allows (allowDependentLaunch), read what does
// not depend on earlier kernels (weights: a GEMV issues its first weight loads), and then wait
// (waitForPriorGrids) until the earlier grids have completed and their writes are visible.
// The rule for every kernel launched through launchKernel: no global write, and no read of anything an earlier
// kernel or step writes, before waitForPriorGrids. Waiting is transitive (a grid completes only after its own
// wait), so a kernel sees the writes of every kernel before it, not only the last one. Two things are safe before
// the wait: the step's upload, whose host-to-device copy completes before the step's first kernel starts (a copy
// is not a programmatic launch), and every later kernel starts after that one; and L2 prefetches, which are
// hints (a load after the wait reads the current contents).
// Every kernel allows before it waits itself (beginDependentWork): the next kernel's blocks then launch as
// soon as this one's are all running and issue their constant loads while this kernel (and the one it waits
// for) still run. Allowing only after the wait cost a decode step of a Qwen3-4B shape at batch 1 about 0.15 ms
// on the H100 (3.47 against 3.30-3.33 ms GPU time, bench/results/cuda-speed-2026-11-21-pass4.md).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <utility>

#include "../cuda-check.h"

namespace ferrum {

/** Waits for the grids this one depends on; a no-op when it was launched without a programmatic dependency. */
__device__ __forceinline__ void waitForPriorGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/** Lets the next kernel in the stream start; it still waits in waitForPriorGrids for this grid to complete. */
__device__ __forceinline__ void allowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

/**
 * Where a kernel's work on earlier kernels' output begins (after its constant loads): lets the next kernel
 * launch, then waits for the earlier grids. Every kernel launched through launchKernel calls it (see above).
 */
__device__ __forceinline__ void beginDependentWork() {
  allowDependentLaunch();
  waitForPriorGrids();
}

/** Whether launchKernel asks for programmatic serialization (setProgrammaticLaunch, in launch.cu). */
extern std::atomic<bool> gProgrammaticLaunch;

/** The launch attribute of thread-block clusters of `cluster` blocks. */
inline cudaLaunchAttribute clusterDimension(dim3 cluster) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster.x;
  attribute.val.clusterDim.y = cluster.y;
  attribute.val.clusterDim.z = cluster.z;
  return attribute;
}

/**
 * Clusters of `cluster` blocks of `kernel` (`threads` a block, `sharedBytes` of dynamic shared memory, opted in
 * already) that the current device holds at once: cudaOccupancyMaxActiveClusters, at least 1. Asked every call; see
 * residentClusters.
 */
int queryResidentClusters(const void* kernel, dim3 cluster, int threads, size_t sharedBytes);

/**
 * queryResidentClusters for kKernel, asked once per device and cluster size (a kernel's launches take one cluster
 * shape per size): GPUs of one model can differ (disabled multiprocessors), and a grid of more clusters than this
 * runs in two waves. Lock-free after the first ask, for launch paths.
 */
template <auto kKernel>
int residentClusters(dim3 cluster, int threads, size_t sharedBytes) {
  constexpr int kDevices = 64;   // devices past these are asked every time
  constexpr int kMaxBlocks = 16;  // the largest (non-portable) cluster
  static std::atomic<int> known[kDevices][kMaxBlocks + 1] = {};
  const unsigned blocks = cluster.x * cluster.y * cluster.z;
  int device = 0;
  checkCuda(cudaGetDevice(&device), "cudaGetDevice");
  std::atomic<int>* cached = device < kDevices && blocks <= kMaxBlocks ? &known[device][blocks] : nullptr;
  int clusters = cached != nullptr ? cached->load(std::memory_order_relaxed) : 0;
  if (clusters > 0) return clusters;
  clusters = queryResidentClusters(reinterpret_cast<const void*>(kKernel), cluster, threads, sharedBytes);
  if (cached != nullptr) cached->store(clusters, std::memory_order_relaxed);
  return clusters;
}

/**
 * Launches `kernel` on `stream` (with PDL when enabled) in thread-block clusters of `cluster` blocks (1 × 1 × 1: no
 * clusters; each grid dimension a multiple of the cluster's), and checks the launch; `name` labels the error.
 */
template <typename... Params, typename... Args>
void launchKernelInClusters(const char* name, void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block,
                            size_t sharedBytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (gProgrammaticLaunch.load(std::memory_order_relaxed)) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    count++;
  }
  if (cluster.x * cluster.y * cluster.z > 1) attributes[count++] = clusterDimension(cluster);
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = sharedBytes;
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  checkCuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), name);
}

/** Launches `kernel` on `stream` (with PDL when enabled) and checks the launch; `name` labels the error. */
template <typename... Params, typename... Args>
void launchKernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, size_t sharedBytes,
                  cudaStream_t stream, Args&&... args) {
  launchKernelInClusters(name, kernel, grid, dim3(1, 1, 1), block, sharedBytes, stream, std::forward<Args>(args)...);
}

}  // namespace ferrum
