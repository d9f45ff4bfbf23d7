// Every GEMM of the model: y[M,N] = x[M,K] · w[N,K]ᵀ with bf16 operands, f32 accumulation, and a bf16 or f32
// output. Up to kGemvMaxRows rows go to the GEMV kernel (launchGemv, or launchGemvSwiglu for the gated MLP's
// gate|up product with SwiGLU fused); up to kSkinnyMaxRows, on Hopper, to the skinny GEMM (launchSkinnyGemm, which
// fuses SwiGLU the same way) where the shape suits it; the rest to cuBLASLt. Plans are cached per shape: a shape tuned ahead of time
// (the decode-graph batch sizes, and powers of two of prefill rows from kSharedTuningMinRows) takes the fastest of
// cuBLASLt's candidates, or of the GEMV's block sizes. An untuned cuBLASLt shape of at least kSharedTuningMinRows
// rows takes the algorithm tuned for the fewest rows at or above its own with the same N and K, where cuBLASLt
// accepts it for this shape; other untuned shapes take the heuristic's first choice, made ahead of time where the
// runner prepared the shape (Gemm::prepare).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "kernels/gemm-skinny.h"
#include "kernels/kernels.h"

namespace ferrum {

/**
 * Rows from which tuned algorithms are shared with untuned row counts (and prefill row counts are tuned at load).
 * On the H100 (Qwen3-4B shape) the fastest of cuBLASLt's candidates at 2,048 rows took the layer's products from
 * 537 to 512 µs alone, and a 2,048-token prompt's TTFT read 29.6–30.3 against 30.7–31.7 ms (alternating builds).
 * At 512 rows the tuned choice was 1.5% faster alone, but with tuning from 16 rows the engine's TTFT read 8.52–8.54
 * against 8.38–8.46 ms, so smaller counts keep the heuristic's choice.
 */
constexpr int kSharedTuningMinRows = 1024;

/** Which implementation Gemm::runVia uses: run()'s choice, or one forced (verification and benchmarks). */
enum class GemmPath { kAuto, kCublas, kSkinny };

class Gemm {
 public:
  /**
   * `workspace` is device memory of `workspaceBytes`, owned by the caller and used by one stream at a time. Runs on
   * the current device.
   */
  Gemm(void* workspace, size_t workspaceBytes);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void run(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream);
  /** `run` through `path`; kSkinny throws where the skinny GEMM does not take the product. */
  void runVia(GemmPath path, const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32,
              cudaStream_t stream);
  /**
   * Time the heuristic's candidate algorithms (or the GEMV's block sizes) for this shape on `stream` (with
   * these operands, whose contents are overwritten) and keep the fastest for later runs. Synchronizes: never
   * call while capturing.
   */
  void tune(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream);
  /**
   * Plan this shape now as `run` would on first use (the heuristic's query, or a shared tuned algorithm), and enqueue
   * one run on these operands (overwriting y) so that its kernel is loaded. On the H100 a cuBLASLt shape met first
   * inside a step stalled that step's GPU work by 0.7–14 ms (the query, and loading a kernel not used before).
   */
  void prepare(const bf16* x, const bf16* w, void* y, int m, int n, int k, bool outF32, cudaStream_t stream);
  /** Whether runSwiglu takes this product (the GEMV's support, or the skinny GEMM's). */
  bool fusesSwiglu(const bf16* x, const bf16* gateUp, const bf16* y, int m, int inter, int k) const;
  /**
   * y = silu(x · gateᵀ) × (x · upᵀ) for gateUp [2 · inter][k] (launchGemvSwiglu, or launchSkinnyGemm); only where
   * fusesSwiglu.
   */
  void runSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, cudaStream_t stream);
  /** `tune` for runSwiglu's product. */
  void tuneSwiglu(const bf16* x, const bf16* gateUp, bf16* y, int m, int inter, int k, cudaStream_t stream);

 private:
  struct Plan {
    // cuBLASLt descriptors, created on first use (desc null until then).
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    int gemvRows = 0;             // GEMV shapes: outputs a block (gemvRowsPerBlock's default until tuned)
    int skinnySplits = 0;         // skinny GEMM shapes: skinnyGemmSplits, asked on first use
    bool skinnyOnePanel = false;  // and skinnyGemmOnePanel, with it
    bool tuned = false;
  };
  /** The plan of a shape; `swiglu` keys runSwiglu's products apart from plain ones. */
  Plan& plan(int m, int n, int k, bool outF32, bool swiglu = false);
  /** Time `launch(rows)` for each of `rowsPerBlock` (GEMV block sizes) and keep the fastest in `p`. */
  template <typename Launch>
  void tuneGemv(Plan& p, const std::vector<int>& rowsPerBlock, cudaStream_t stream, Launch launch);
  /**
   * Creates `p`'s cuBLASLt descriptors if not yet done, with the algorithm tuned for the fewest rows at or above m
   * (same n, k and output; from kSharedTuningMinRows) that cuBLASLt accepts for m, or else the heuristic's first.
   */
  void prepareCublas(Plan& p, int m, int n, int k, bool outF32);
  void runCublas(const Plan& p, const bf16* x, const bf16* w, void* y, cudaStream_t stream);
  /** Whether the skinny GEMM takes this product here (skinnyGemmAvailable and skinnyGemmSupports). */
  bool skinny(const bf16* x, const bf16* w, const void* y, int m, int outCols, int k, bool outF32, bool glu) const;
  void runSkinny(const bf16* x, const bf16* w, bf16* y, int m, int outCols, int k, bool glu, cudaStream_t stream);
  /** The skinny GEMM's tensor map of [rows][k] at `base` in boxes of `boxRows` rows, made on first use. */
  const CUtensorMap& tensorMap(const bf16* base, int rows, int k, int boxRows);
  /** Up to `max` of the heuristic's algorithms for `p`'s shape, best guess first. */
  int candidates(const Plan& p, cublasLtMatmulHeuristicResult_t* results, int max) const;

  struct MapKey {
    const bf16* base;
    int rows, k, boxRows;
    bool operator==(const MapKey& o) const {
      return base == o.base && rows == o.rows && k == o.k && boxRows == o.boxRows;
    }
  };
  struct MapKeyHash {
    size_t operator()(const MapKey& key) const {
      return std::hash<const void*>()(key.base) ^ (static_cast<size_t>(key.rows) << 40) ^
             (static_cast<size_t>(key.k) << 12) ^ static_cast<size_t>(key.boxRows);
    }
  };

  cublasLtHandle_t handle_ = nullptr;
  bool skinny_ = false;  // skinnyGemmAvailable on the current device at construction
  void* workspace_;  // cuBLASLt's; also what tuning overwrites to start each timed run with a cold L2
  size_t workspaceBytes_;
  std::unordered_map<uint64_t, Plan> plans_;
  /** Tuned cuBLASLt algorithms of kSharedTuningMinRows rows or more, by (n, k, output) key (shapeKey), then rows. */
  std::unordered_map<uint64_t, std::map<int, cublasLtMatmulAlgo_t>> tunedAlgos_;
  /** The skinny GEMM's tensor maps: the weights', and x's per row count (its rows past m read as zeros). */
  std::unordered_map<MapKey, CUtensorMap, MapKeyHash> tensorMaps_;
};

}  // namespace ferrum
