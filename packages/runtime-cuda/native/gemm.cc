#include "gemm.h"

#include <string>

#include "cuda-check.h"

namespace ferrum {

Gemm::Gemm(void* workspace, size_t workspaceBytes) : workspace_(workspace), workspaceBytes_(workspaceBytes) {
  FERRUM_CUBLAS(cublasLtCreate(&handle_));
}

Gemm::~Gemm() {
  for (auto& entry : plans_) {
    cublasLtMatrixLayoutDestroy(entry.second.a);
    cublasLtMatrixLayoutDestroy(entry.second.b);
    cublasLtMatrixLayoutDestroy(entry.second.c);
    cublasLtMatmulDescDestroy(entry.second.desc);
  }
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

// Row-major y = x·wᵀ is column-major yᵀ (n×m) = op(A)·B with A = w seen as a k×n column-major matrix
// (transposed) and B = x seen as k×m column-major.
int Gemm::candidates(const Plan& p, cublasLtMatmulHeuristicResult_t* results, int max) const {
  cublasLtMatmulPreference_t preference = nullptr;
  FERRUM_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
  FERRUM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspaceBytes_, sizeof(workspaceBytes_)));
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, preference, max, results, &count);
  cublasLtMatmulPreferenceDestroy(preference);
  return status == CUBLAS_STATUS_SUCCESS ? count : 0;
}

Gemm::Plan& Gemm::plan(int m, int n, int k, bool outF32) {
  const uint64_t key = (static_cast<uint64_t>(m) << 42) ^ (static_cast<uint64_t>(n) << 21) ^
                       static_cast<uint64_t>(k) ^ (outF32 ? (1ull << 63) : 0ull);
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  Plan p;
  FERRUM_CUBLAS(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transA = CUBLAS_OP_T, transB = CUBLAS_OP_N;
  FERRUM_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof(transA)));
  FERRUM_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof(transB)));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, k, n, k));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, k, m, k));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, outF32 ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
  cublasLtMatmulHeuristicResult_t result{};
  if (candidates(p, &result, 1) == 0) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.desc);
    throw NativeError("internal", "cuBLASLt found no algorithm for " + std::to_string(m) + "x" + std::to_string(n) +
                                      "x" + std::to_string(k));
  }
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void Gemm::tune(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  if (m == 0 || gemvSupports(x, w, m, k)) return;
  Plan& p = plan(m, n, k, outF32);
  if (p.tuned) return;
  constexpr int kCandidates = 16, kRepeats = 5;
  cublasLtMatmulHeuristicResult_t results[kCandidates];
  const int count = candidates(p, results, kCandidates);
  cudaEvent_t start = nullptr, stop = nullptr;
  FERRUM_CUDA(cudaEventCreate(&start));
  FERRUM_CUDA(cudaEventCreate(&stop));
  const float alpha = 1.f, beta = 0.f;
  float best = 0.f;
  for (int i = 0; i < count; i++) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const cublasLtMatmulAlgo_t* algo = &results[i].algo;
    auto once = [&]() {
      return cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, algo, workspace_,
                            workspaceBytes_, stream);
    };
    if (once() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate this shape cannot run: skip it
    FERRUM_CUDA(cudaEventRecord(start, stream));
    for (int r = 0; r < kRepeats; r++) once();
    FERRUM_CUDA(cudaEventRecord(stop, stream));
    FERRUM_CUDA(cudaEventSynchronize(stop));
    float ms = 0.f;
    FERRUM_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (best == 0.f || ms < best) {
      best = ms;
      p.algo = *algo;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  p.tuned = true;
}

void Gemm::run(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  if (m == 0) return;
  // Few rows (decode) are a pure weight stream: the GEMV kernel runs it nearer the bandwidth limit than
  // cuBLASLt's small-M algorithms, with no split-K reduce kernel.
  if (gemvSupports(x, w, m, k)) {
    launchGemv(x, w, y, m, n, k, outF32, stream);
    return;
  }
  const Plan& p = plan(m, n, k, outF32);
  const float alpha = 1.f, beta = 0.f;
  FERRUM_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                               workspaceBytes_, stream));
}

}  // namespace ferrum
