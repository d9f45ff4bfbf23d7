// How far cuBLASLt's heuristic (what Gemm::tune times: its first 16 candidates) is from the best
// configuration cuBLASLt can run, for the model's products y[M,N] = x[M,K] · w[N,K]ᵀ (bf16, f32 accumulate),
// timed as the model meets them: weights cold in L2. The search walks out from the heuristic's fastest
// candidates one attribute at a time (tile, stages, split-K and reduction, cluster shape, custom option, swizzle).
// Operands are the runtime's seeded dummy values (launchFillUniform), not zeros: a product's power draw depends on
// its data, and so may the clock it runs at.
//   build: nvcc -O2 -std=c++17 -I packages/runtime-cuda/native -o gemm-search scripts/gpu/gemm-search.cu
//          packages/runtime-cuda/native/kernels/weight-init.cu -lcublasLt
//   usage: gemm-search M:N:K [M:N:K ...]   (prints the timings of each shape, then its winning configuration as
//   one line `CONFIG N:K:algo:tile:stages:splitK:reduction:swizzle:custom:cluster`, for scripts)
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/kernels.h"

#define CHECK(x)                                                              \
  do {                                                                        \
    auto status_ = (x);                                                       \
    if (status_ != 0) {                                                       \
      std::fprintf(stderr, "%s failed: %d (line %d)\n", #x, int(status_), __LINE__); \
      std::exit(1);                                                           \
    }                                                                         \
  } while (0)

namespace {

constexpr size_t kWorkspaceBytes = 64ull << 20;
constexpr size_t kFlushBytes = 128ull << 20;

struct Shape {
  int m, n, k;
};

struct Config {
  int algoId = -1;
  uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
  int32_t splitK = 1;
  uint16_t cluster = 0;
};

struct Context {
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  void *x, *w, *y, *workspace, *flush;
  cudaStream_t stream;
  cudaEvent_t start, stop;
};

template <typename T>
std::vector<T> capList(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) {
    return {};
  }
  std::vector<T> values(bytes / sizeof(T));
  CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, values.data(), bytes, &bytes));
  return values;
}

template <typename T>
T capValue(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return value;
}

/** Median ms of 7 cold-L2 runs of `algo`, or a negative number when cuBLASLt refuses it. */
float timeAlgo(Context& ctx, const cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(ctx.handle, ctx.desc, ctx.a, ctx.b, ctx.c, ctx.c, &algo, &check) !=
          CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > kWorkspaceBytes) {
    return -1.f;
  }
  const float alpha = 1.f, beta = 0.f;
  auto once = [&] {
    return cublasLtMatmul(ctx.handle, ctx.desc, &alpha, ctx.w, ctx.a, ctx.x, ctx.b, &beta, ctx.y, ctx.c, ctx.y,
                          ctx.c, &algo, ctx.workspace, kWorkspaceBytes, ctx.stream);
  };
  if (once() != CUBLAS_STATUS_SUCCESS) return -1.f;
  float times[7];
  for (float& t : times) {
    CHECK(cudaMemsetAsync(ctx.flush, 0, kFlushBytes, ctx.stream));
    CHECK(cudaEventRecord(ctx.start, ctx.stream));
    once();
    CHECK(cudaEventRecord(ctx.stop, ctx.stream));
    CHECK(cudaEventSynchronize(ctx.stop));
    CHECK(cudaEventElapsedTime(&t, ctx.start, ctx.stop));
  }
  std::sort(times, times + 7);
  return times[3];
}

Config readConfig(const cublasLtMatmulAlgo_t& algo) {
  Config c;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &c.algoId, sizeof(c.algoId), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile, sizeof(c.tile), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages, sizeof(c.stages), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &c.splitK, sizeof(c.splitK), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &c.reduction,
                                       sizeof(c.reduction), &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle, sizeof(c.swizzle),
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom, sizeof(c.custom),
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c.cluster, sizeof(c.cluster),
                                       &written);
  return c;
}

void print(const char* label, float ms, const Config& c, double floorMs) {
  std::printf("  %-22s %8.1f us (%3.0f%% of floor)  algo %d tile %u stages %u splitK %d red %u swz %u custom %u "
              "cluster %u\n",
              label, ms * 1e3, 100.0 * floorMs / ms, c.algoId, c.tile, c.stages, c.splitK, c.reduction, c.swizzle,
              c.custom, c.cluster);
}

struct Timed {
  float ms;
  Config config;
};

/** The heuristic's first `count` candidates that run, each timed, fastest first. */
std::vector<std::pair<float, cublasLtMatmulAlgo_t>> timedCandidates(Context& ctx, int count) {
  cublasLtMatmulPreference_t preference;
  CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const size_t workspace = kWorkspaceBytes;
  CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof(workspace)));
  std::vector<cublasLtMatmulHeuristicResult_t> results(count);
  int returned = 0;
  CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.handle, ctx.desc, ctx.a, ctx.b, ctx.c, ctx.c, preference, count,
                                       results.data(), &returned));
  cublasLtMatmulPreferenceDestroy(preference);
  std::vector<std::pair<float, cublasLtMatmulAlgo_t>> timed;
  for (int i = 0; i < returned; i++) {
    const float ms = timeAlgo(ctx, results[i].algo);
    if (ms > 0) timed.push_back({ms, results[i].algo});
  }
  std::sort(timed.begin(), timed.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  return timed;
}

/** The best of the heuristic's first `count` candidates. */
Timed heuristicBest(Context& ctx, int count) {
  const auto timed = timedCandidates(ctx, count);
  if (timed.empty()) return {-1.f, {}};
  return {timed.front().first, readConfig(timed.front().second)};
}

/** One attribute's value set on a copy of `algo`, or false when cuBLASLt refuses it. */
template <typename T>
bool withValue(cublasLtMatmulAlgo_t algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value,
               cublasLtMatmulAlgo_t* out) {
  if (cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)) != CUBLAS_STATUS_SUCCESS) return false;
  *out = algo;
  return true;
}

/**
 * Coordinate descent from each of the heuristic's `seeds` fastest candidates: each round tries every value of
 * one attribute at a time (tile, stages, split-K with each reduction, cluster shape, custom option, swizzle)
 * and keeps the fastest, until a round changes nothing.
 */
Timed searchAll(Context& ctx, int seeds) {
  const auto timed = timedCandidates(ctx, 128);
  Timed best{-1.f, {}};
  int tried = 0;
  for (int s = 0; s < std::min<int>(seeds, timed.size()); s++) {
    float current = timed[s].first;
    cublasLtMatmulAlgo_t algo = timed[s].second;
    const auto tiles = capList<uint32_t>(algo, CUBLASLT_ALGO_CAP_TILE_IDS);
    const auto stages = capList<uint32_t>(algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
    const bool splitK = capValue<int32_t>(algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
    const uint32_t reductions = capValue<uint32_t>(algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
    const int32_t customMax = capValue<int32_t>(algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
    std::vector<cublasLtMatmulAlgo_t> moves;
    for (bool changed = true; changed;) {
      changed = false;
      moves.clear();
      cublasLtMatmulAlgo_t next;
      for (uint32_t t : tiles) if (withValue(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, t, &next)) moves.push_back(next);
      for (uint32_t t : stages) if (withValue(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, t, &next)) moves.push_back(next);
      for (uint16_t c = 0; c <= 20; c++) {
        if (c != 1 && withValue(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c, &next)) moves.push_back(next);
      }
      for (uint32_t c = 0; c <= static_cast<uint32_t>(customMax); c++) {
        if (withValue(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c, &next)) moves.push_back(next);
      }
      for (uint32_t z = 0; z <= 1; z++) {
        if (withValue(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, z, &next)) moves.push_back(next);
      }
      for (int32_t k : {1, 2, 3, 4, 5, 6, 8, 12, 16}) {
        if (k > 1 && !splitK) break;
        for (uint32_t red : {0u, 1u, 2u, 4u}) {
          if ((k == 1) != (red == 0) || (red != 0 && (reductions & red) == 0)) continue;
          cublasLtMatmulAlgo_t withSplit;
          if (withValue(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, k, &withSplit) &&
              withValue(withSplit, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, red, &next)) {
            moves.push_back(next);
          }
        }
      }
      for (const auto& move : moves) {
        const float ms = timeAlgo(ctx, move);
        if (ms <= 0) continue;
        tried++;
        if (ms < current * 0.99f) {
          current = ms;
          algo = move;
          changed = true;
        }
      }
    }
    if (best.ms < 0 || current < best.ms) best = {current, readConfig(algo)};
  }
  std::printf("  search: %d configurations ran from %d seeds\n", tried, std::min<int>(seeds, timed.size()));
  return best;
}

double copyBandwidth(Context& ctx) {
  const size_t bytes = 1ull << 30;
  void *src, *dst;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream));
  float best = 1e9f;
  for (int i = 0; i < 5; i++) {
    float ms;
    CHECK(cudaEventRecord(ctx.start, ctx.stream));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream));
    CHECK(cudaEventRecord(ctx.stop, ctx.stream));
    CHECK(cudaEventSynchronize(ctx.stop));
    CHECK(cudaEventElapsedTime(&ms, ctx.start, ctx.stop));
    best = std::min(best, ms);
  }
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (best * 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
  // Every shape is read before the GPU is touched, so a typo fails at once.
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; i++) {
    Shape s{};
    if (std::sscanf(argv[i], "%d:%d:%d", &s.m, &s.n, &s.k) != 3 || s.m < 1 || s.n < 1 || s.k < 1) {
      std::fprintf(stderr, "bad shape %s (want M:N:K, each positive)\n", argv[i]);
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    std::fprintf(stderr, "usage: gemm-search M:N:K [M:N:K ...]\n");
    return 2;
  }
  Context ctx{};
  CHECK(cublasLtCreate(&ctx.handle));
  CHECK(cudaStreamCreate(&ctx.stream));
  CHECK(cudaEventCreate(&ctx.start));
  CHECK(cudaEventCreate(&ctx.stop));
  CHECK(cudaMalloc(&ctx.workspace, kWorkspaceBytes));
  CHECK(cudaMalloc(&ctx.flush, kFlushBytes));
  const double bandwidth = copyBandwidth(ctx);
  std::printf("copy bandwidth %.0f GB/s\n", bandwidth / 1e9);
  for (const Shape& s : shapes) {
    CHECK(cudaMalloc(&ctx.x, size_t(s.m) * s.k * 2));
    CHECK(cudaMalloc(&ctx.w, size_t(s.n) * s.k * 2));
    CHECK(cudaMalloc(&ctx.y, size_t(s.m) * s.n * 2));
    ferrum::launchFillUniform(static_cast<ferrum::bf16*>(ctx.x), size_t(s.m) * s.k, 1, 1.f, ctx.stream);
    ferrum::launchFillUniform(static_cast<ferrum::bf16*>(ctx.w), size_t(s.n) * s.k, 2, 0.05f, ctx.stream);
    CHECK(cudaStreamSynchronize(ctx.stream));
    CHECK(cublasLtMatmulDescCreate(&ctx.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transA = CUBLAS_OP_T, transB = CUBLAS_OP_N;
    CHECK(cublasLtMatmulDescSetAttribute(ctx.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof(transA)));
    CHECK(cublasLtMatmulDescSetAttribute(ctx.desc, CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof(transB)));
    CHECK(cublasLtMatrixLayoutCreate(&ctx.a, CUDA_R_16BF, s.k, s.n, s.k));
    CHECK(cublasLtMatrixLayoutCreate(&ctx.b, CUDA_R_16BF, s.k, s.m, s.k));
    CHECK(cublasLtMatrixLayoutCreate(&ctx.c, CUDA_R_16BF, s.n, s.m, s.n));
    const double bytes = 2.0 * (double(s.n) * s.k + double(s.m) * s.k + double(s.m) * s.n);
    const double floorMs = bytes / bandwidth * 1e3;
    std::printf("M=%d N=%d K=%d: copy-rate floor %.1f us\n", s.m, s.n, s.k, floorMs * 1e3);
    const Timed h16 = heuristicBest(ctx, 16);
    print("heuristic, best of 16", h16.ms, h16.config, floorMs);
    const Timed h128 = heuristicBest(ctx, 128);
    print("heuristic, best of 128", h128.ms, h128.config, floorMs);
    const Timed all = searchAll(ctx, 6);
    print("search", all.ms, all.config, floorMs);
    std::printf("CONFIG %d:%d:%d:%u:%u:%d:%u:%u:%u:%u\n", s.n, s.k, all.config.algoId, all.config.tile,
                all.config.stages, all.config.splitK, all.config.reduction, all.config.swizzle, all.config.custom,
                all.config.cluster);
    std::fflush(stdout);
    cublasLtMatrixLayoutDestroy(ctx.a);
    cublasLtMatrixLayoutDestroy(ctx.b);
    cublasLtMatrixLayoutDestroy(ctx.c);
    cublasLtMatmulDescDestroy(ctx.desc);
    cudaFree(ctx.x);
    cudaFree(ctx.w);
    cudaFree(ctx.y);
  }
  return 0;
}
