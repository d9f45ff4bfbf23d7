// Every CUDA and cuBLASLt call goes through these checks: a failed call becomes a NativeError whose code is
// `out_of_memory` for allocation failures and `internal` otherwise.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "native-error.h"

namespace ferrum {

inline void checkCuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const char* code = status == cudaErrorMemoryAllocation ? "out_of_memory" : "internal";
  throw NativeError(code, std::string(what) + ": " + cudaGetErrorString(status));
}

inline void checkCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* code = status == CUBLAS_STATUS_ALLOC_FAILED ? "out_of_memory" : "internal";
  throw NativeError(code, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

}  // namespace ferrum

#define FERRUM_CUDA(call) ::ferrum::checkCuda((call), #call)
#define FERRUM_CUBLAS(call) ::ferrum::checkCublas((call), #call)
// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define FERRUM_LAUNCHED(name) ::ferrum::checkCuda(cudaGetLastError(), name)
