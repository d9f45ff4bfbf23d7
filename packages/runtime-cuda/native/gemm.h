// Every GEMM of the model: y[M,N] = x[M,K] · w[N,K]ᵀ with bf16 operands, f32 accumulation, and a bf16 or f32
// output. Up to kGemvMaxRows rows go to the GEMV kernel (launchGemv), the rest to cuBLASLt, whose plans
// (descriptors + an algorithm) are cached per shape: the heuristic's first choice, or the fastest of its
// candidates for shapes tuned ahead of time (the decode-graph batch sizes).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <unordered_map>

#include "kernels/kernels.h"

namespace ferrum {

class Gemm {
 public:
  /** `workspace` is device memory of `workspaceBytes`, owned by the caller. */
  Gemm(void* workspace, size_t workspaceBytes);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void run(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream);
  /**
   * Time the heuristic's candidate algorithms for this shape on `stream` (with these operands, whose
   * contents are overwritten) and keep the fastest for later runs. Synchronizes: never call while capturing.
   */
  void tune(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool tuned = false;
  };
  Plan& plan(int m, int n, int k, bool outF32);
  /** Up to `max` of the heuristic's algorithms for `p`'s shape, best guess first. */
  int candidates(const Plan& p, cublasLtMatmulHeuristicResult_t* results, int max) const;

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_;
  size_t workspaceBytes_;
  std::unordered_map<uint64_t, Plan> plans_;
};

}  // namespace ferrum
