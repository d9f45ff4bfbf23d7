// Synchronous on the JS thread: these run once per benchmark, before any model is timed. Inputs are random
// (never zeros, which can run faster than real data); the median of the timed repetitions is reported.
#include "device-bench.h"

#include <algorithm>
#include <vector>

#include "cuda-check.h"
#include "device-memory.h"
#include "gemm.h"
#include "kernels/kernels.h"
#include "napi-values.h"

namespace ferrum {
namespace {

struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  Timer() {
    FERRUM_CUDA(cudaEventCreate(&start));
    FERRUM_CUDA(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

/** Median seconds of `reps` runs of `body` on `stream`, after two warm-up runs. */
template <typename F>
double medianSeconds(int reps, cudaStream_t stream, F body) {
  Timer timer;
  body();
  body();
  std::vector<float> times;
  for (int r = 0; r < reps; r++) {
    FERRUM_CUDA(cudaEventRecord(timer.start, stream));
    body();
    FERRUM_CUDA(cudaEventRecord(timer.stop, stream));
    FERRUM_CUDA(cudaEventSynchronize(timer.stop));
    float ms = 0.f;
    FERRUM_CUDA(cudaEventElapsedTime(&ms, timer.start, timer.stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] / 1e3;
}

int argInt(const Napi::CallbackInfo& info, size_t i, int fallback) {
  return info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : fallback;
}

Napi::Value guarded(const Napi::CallbackInfo& info, double (*body)(const Napi::CallbackInfo&)) {
  try {
    return Napi::Number::New(info.Env(), body(info));
  } catch (const NativeError& e) {
    makeError(info.Env(), e.code(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

double bandwidth(const Napi::CallbackInfo& info) {
  const double bytesArg = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 4e9;
  const size_t bytes = static_cast<size_t>(bytesArg) / 2 * 2;
  const int reps = argInt(info, 1, 20);
  FERRUM_CUDA(cudaSetDevice(argInt(info, 2, 0)));
  DeviceBuffer src(bytes), dst(bytes);
  launchFillUniform(src.as<bf16>(), bytes / 2, 7, 1.f, nullptr);
  const double seconds = medianSeconds(reps, nullptr, [&] {
    FERRUM_CUDA(cudaMemcpyAsync(dst.as(), src.as(), bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  return 2.0 * static_cast<double>(bytes) / seconds;
}

double gemmRate(const Napi::CallbackInfo& info) {
  const int m = argInt(info, 0, 8192), n = argInt(info, 1, 8192), k = argInt(info, 2, 8192);
  const int reps = argInt(info, 3, 20);
  FERRUM_CUDA(cudaSetDevice(argInt(info, 4, 0)));
  const size_t workspaceBytes = 32u << 20;
  DeviceBuffer x(2ull * m * k), w(2ull * n * k), y(2ull * m * n), workspace(workspaceBytes);
  launchFillUniform(x.as<bf16>(), static_cast<size_t>(m) * k, 11, 1.f, nullptr);
  launchFillUniform(w.as<bf16>(), static_cast<size_t>(n) * k, 13, 1.f, nullptr);
  Gemm gemm(workspace.as(), workspaceBytes);
  const double seconds = medianSeconds(reps, nullptr, [&] {
    gemm.run(x.as<bf16>(), w.as<bf16>(), y.as(), m, n, k, false, nullptr);
  });
  return 2.0 * m * static_cast<double>(n) * k / seconds;
}

}  // namespace

Napi::Value MeasureBandwidth(const Napi::CallbackInfo& info) { return guarded(info, bandwidth); }
Napi::Value MeasureGemmRate(const Napi::CallbackInfo& info) { return guarded(info, gemmRate); }

}  // namespace ferrum
