#include "gemm.h"

#include <algorithm>
#include <string>

#include "cuda-check.h"

namespace ferrum {
namespace {

// Times runs of a product as the model meets them: weights cold in L2 (a layer's weights are long evicted
// when they come round again), so before each run `flush` bytes of scratch are overwritten; the L2 would
// otherwise keep most of a 20-30 MB weight matrix from one repetition to the next.
class ColdTimer {
 public:
  ColdTimer(void* flush, size_t flushBytes) : flush_(flush), flushBytes_(flushBytes) {
    FERRUM_CUDA(cudaEventCreate(&start_));
    FERRUM_CUDA(cudaEventCreate(&stop_));
  }
  ~ColdTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  /** Median milliseconds of kRepeats runs of `body` on `stream`. */
  template <typename F>
  float ms(cudaStream_t stream, F body) {
    constexpr int kRepeats = 8;
    float times[kRepeats];
    for (float& t : times) {
      FERRUM_CUDA(cudaMemsetAsync(flush_, 0, flushBytes_, stream));
      FERRUM_CUDA(cudaEventRecord(start_, stream));
      body();
      FERRUM_CUDA(cudaEventRecord(stop_, stream));
      FERRUM_CUDA(cudaEventSynchronize(stop_));
      FERRUM_CUDA(cudaEventElapsedTime(&t, start_, stop_));
    }
    std::sort(times, times + kRepeats);
    return times[kRepeats / 2];
  }

 private:
  void* flush_;
  size_t flushBytes_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/** (n, k, output type): the part of a product's shape a tuned algorithm is shared across row counts by. */
uint64_t shapeKey(int n, int k, bool outF32) {
  return (static_cast<uint64_t>(n) << 32) ^ static_cast<uint64_t>(k) ^ (outF32 ? (1ull << 63) : 0ull);
}

}  // namespace

Gemm::Gemm(void* workspace, size_t workspaceBytes) : workspace_(workspace), workspaceBytes_(workspaceBytes) {
  FERRUM_CUBLAS(cublasLtCreate(&handle_));
  int device = 0;
  FERRUM_CUDA(cudaGetDevice(&device));
  skinny_ = skinnyGemmAvailable(device);
}

Gemm::~Gemm() {
  for (auto& entry : plans_) {
    if (entry.second.desc == nullptr) continue;
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

Gemm::Plan& Gemm::plan(int m, int n, int k, bool outF32, bool swiglu) {
  const uint64_t key = (static_cast<uint64_t>(m) << 42) ^ (static_cast<uint64_t>(n) << 21) ^
                       static_cast<uint64_t>(k) ^ (outF32 ? (1ull << 63) : 0ull) ^ (swiglu ? (1ull << 62) : 0ull);
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  Plan made;
  if (m <= kGemvMaxRows) made.gemvRows = gemvRowsPerBlock(m, swiglu).front();
  return plans_.emplace(key, made).first->second;
}

void Gemm::prepareCublas(Plan& p, int m, int n, int k, bool outF32) {
  if (p.desc != nullptr) return;
  Plan made;
  FERRUM_CUBLAS(cublasLtMatmulDescCreate(&made.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transA = CUBLAS_OP_T, transB = CUBLAS_OP_N;
  FERRUM_CUBLAS(cublasLtMatmulDescSetAttribute(made.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof(transA)));
  FERRUM_CUBLAS(cublasLtMatmulDescSetAttribute(made.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof(transB)));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&made.a, CUDA_R_16BF, k, n, k));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&made.b, CUDA_R_16BF, k, m, k));
  FERRUM_CUBLAS(cublasLtMatrixLayoutCreate(&made.c, outF32 ? CUDA_R_32F : CUDA_R_16BF, n, m, n));
  // The algorithm tuned for the fewest rows at or above m that cuBLASLt accepts for m, else the heuristic's first.
  bool chosen = false;
  const auto tuned = m >= kSharedTuningMinRows ? tunedAlgos_.find(shapeKey(n, k, outF32)) : tunedAlgos_.end();
  if (tuned != tunedAlgos_.end()) {
    for (auto it = tuned->second.lower_bound(m); it != tuned->second.end() && !chosen; ++it) {
      cublasLtMatmulHeuristicResult_t check{};
      chosen = cublasLtMatmulAlgoCheck(handle_, made.desc, made.a, made.b, made.c, made.c, &it->second, &check) ==
                   CUBLAS_STATUS_SUCCESS &&
               check.workspaceSize <= workspaceBytes_;
      if (chosen) made.algo = it->second;
    }
  }
  if (!chosen) {
    cublasLtMatmulHeuristicResult_t result{};
    if (candidates(made, &result, 1) == 0) {
      cublasLtMatrixLayoutDestroy(made.a);
      cublasLtMatrixLayoutDestroy(made.b);
      cublasLtMatrixLayoutDestroy(made.c);
      cublasLtMatmulDescDestroy(made.desc);
      throw NativeError("internal", "cuBLASLt found no algorithm for " + std::to_string(m) + "x" +
                                        std::to_string(n) + "x" + std::to_string(k));
    }
    made.algo = result.algo;
  }
  p.desc = made.desc;
  p.a = made.a;
  p.b = made.b;
  p.c = made.c;
  p.algo = made.algo;
}

bool Gemm::skinny(const bf16* x, const bf16* w, const void* y, int m, int outCols, int k, bool outF32,
                  bool glu) const {
  return skinny_ && skinnyGemmSupports(x, w, y, m, outCols, k, outF32, glu);
}

const CUtensorMap& Gemm::tensorMap(const bf16* base, int rows, int k, int boxRows) {
  const MapKey key{base, rows, k, boxRows};
  auto found = tensorMaps_.find(key);
  if (found == tensorMaps_.end()) found = tensorMaps_.emplace(key, skinnyTensorMap(base, rows, k, boxRows)).first;
  return found->second;
}

void Gemm::runSkinny(const bf16* x, const bf16* w, bf16* y, int m, int outCols, int k, bool glu, cudaStream_t stream) {
  Plan& p = plan(m, outCols, k, false, glu);
  if (p.skinnySplits == 0) {
    p.skinnySplits = skinnyGemmSplits(outCols, k, glu);
    p.skinnyOnePanel = skinnyGemmOnePanel(m, outCols, glu, p.skinnySplits);
  }
  const CUtensorMap& xMap = tensorMap(x, m, k, kSkinnyMaxRows);
  const CUtensorMap& wMap = tensorMap(w, glu ? 2 * outCols : outCols, k, skinnyWeightBoxRows(glu));
  launchSkinnyGemm(xMap, wMap, y, m, outCols, k, glu, p.skinnySplits, p.skinnyOnePanel, stream);
}

void Gemm::runCublas(const Plan& p, const bf16* x, const bf16* w, void* y, cudaStream_t stream) {
  const float alpha = 1.f, beta = 0.f;
  FERRUM_CUBLAS(cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                               workspaceBytes_, stream));
}

template <typename Launch>
void Gemm::tuneGemv(Plan& p, const std::vector<int>& rowsPerBlock, cudaStream_t stream, Launch launch) {
  if (p.tuned) return;
  ColdTimer timer(workspace_, workspaceBytes_);
  float best = 0.f;
  for (int rows : rowsPerBlock) {
    launch(rows);  // untimed: the first launch of a kernel pays for loading it
    const float ms = timer.ms(stream, [&] { launch(rows); });
    if (best == 0.f || ms < best) {
      best = ms;
      p.gemvRows = rows;
    }
  }
  p.tuned = true;
}

bool Gemm::fusesSwiglu(const bf16* x, const bf16* gateUp, const bf16* y, int m, int inter, int k) const {
  return gemvSupports(x, gateUp, m, k) || skinny(x, gateUp, y, m, inter, k, false, true);
}

void Gemm::tuneSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, cudaStream_t stream) {
  if (m == 0) return;
  // As in tune: the skinny GEMM has nothing to time, and one run plans it and loads its kernel.
  if (!gemvSupports(x, gateUp, m, k)) {
    if (skinny(x, gateUp, y, m, inter, k, false, true)) runSkinny(x, gateUp, y, m, inter, k, true, stream);
    return;
  }
  tuneGemv(plan(m, inter, k, false, true), gemvRowsPerBlock(m, true), stream,
           [&](int rows) { launchGemvSwiglu(x, gateUp, y, m, inter, k, rows, stream); });
}

void Gemm::runSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, cudaStream_t stream) {
  if (m == 0) return;
  if (!gemvSupports(x, gateUp, m, k)) return runSkinny(x, gateUp, y, m, inter, k, true, stream);
  launchGemvSwiglu(x, gateUp, y, m, inter, k, plan(m, inter, k, false, true).gemvRows, stream);
}

void Gemm::tune(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  if (m == 0) return;
  if (gemvSupports(x, w, m, k)) {
    tuneGemv(plan(m, n, k, outF32), gemvRowsPerBlock(m, false), stream,
             [&](int rows) { launchGemv(x, w, y, m, n, k, outF32, rows, stream); });
    return;
  }
  // The skinny GEMM's split count follows from the shape: nothing to time, but one run plans it and loads its kernel
  // (tuning comes before a decode graph's capture).
  if (skinny(x, w, y, m, n, k, outF32, false)) return runSkinny(x, w, static_cast<bf16*>(y), m, n, k, false, stream);
  Plan& p = plan(m, n, k, outF32);
  if (p.tuned) return;
  prepareCublas(p, m, n, k, outF32);
  constexpr int kCandidates = 16;
  cublasLtMatmulHeuristicResult_t results[kCandidates];
  const int count = candidates(p, results, kCandidates);
  ColdTimer timer(workspace_, workspaceBytes_);
  float best = 0.f;
  const float alpha = 1.f, beta = 0.f;
  for (int i = 0; i < count; i++) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    const cublasLtMatmulAlgo_t* algo = &results[i].algo;
    auto once = [&]() {
      return cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, algo, workspace_,
                            workspaceBytes_, stream);
    };
    if (once() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate this shape cannot run: skip it
    const float ms = timer.ms(stream, once);
    if (best == 0.f || ms < best) {
      best = ms;
      p.algo = *algo;
    }
  }
  p.tuned = true;
  if (m >= kSharedTuningMinRows) tunedAlgos_[shapeKey(n, k, outF32)][m] = p.algo;
}

void Gemm::run(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  if (m == 0) return;
  // Few rows (decode) are a pure weight stream: the GEMV kernel runs it nearer the bandwidth limit than
  // cuBLASLt's small-M algorithms, with no split-K reduce kernel.
  if (gemvSupports(x, w, m, k)) {
    launchGemv(x, w, y, m, n, k, outF32, plan(m, n, k, outF32).gemvRows, stream);
    return;
  }
  if (skinny(x, w, y, m, n, k, outF32, false)) return runSkinny(x, w, static_cast<bf16*>(y), m, n, k, false, stream);
  Plan& p = plan(m, n, k, outF32);
  prepareCublas(p, m, n, k, outF32);
  runCublas(p, x, w, y, stream);
}

void Gemm::prepare(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream) {
  if (!gemvSupports(x, w, m, k)) run(x, w, y, m, n, k, outF32, stream);  // run's first use plans the shape
}

void Gemm::runVia(GemmPath path, const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32,
                  cudaStream_t stream) {
  if (path == GemmPath::kAuto) {
    run(x, w, y, m, n, k, outF32, stream);
  } else if (path == GemmPath::kSkinny) {
    if (!skinny(x, w, y, m, n, k, outF32, false)) {
      throw NativeError("invalid_argument", "the skinny GEMM does not take " + std::to_string(m) + "x" +
                                                std::to_string(n) + "x" + std::to_string(k) + " here");
    }
    runSkinny(x, w, static_cast<bf16*>(y), m, n, k, false, stream);
  } else if (m > 0) {
    Plan& p = plan(m, n, k, outF32);
    prepareCublas(p, m, n, k, outF32);
    runCublas(p, x, w, y, stream);
  }
}

}  // namespace ferrum
