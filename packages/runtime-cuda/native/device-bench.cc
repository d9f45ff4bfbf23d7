// Synchronous on the JS thread: these run once per benchmark, before any model is timed. Inputs are random
// (never zeros, which can run faster than real data); the median of the timed repetitions is reported.
#include "device-bench.h"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstring>
#include <string>
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

/** Median seconds of `reps` runs of `body` on `stream`, after two warm-up runs; `prepare` runs untimed before each. */
template <typename F, typename P = void (*)()>
double medianSeconds(int reps, cudaStream_t stream, F body, P prepare = [] {}) {
  Timer timer;
  body();
  body();
  std::vector<float> times;
  for (int r = 0; r < reps; r++) {
    prepare();
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

/** Runs `body`; a NativeError becomes a JS error carrying its code. */
Napi::Value guarded(const Napi::CallbackInfo& info, Napi::Value (*body)(const Napi::CallbackInfo&)) {
  try {
    return body(info);
  } catch (const NativeError& e) {
    makeError(info.Env(), e.code(), e.what()).ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
}

Napi::Value bandwidth(const Napi::CallbackInfo& info) {
  const double bytesArg = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 4e9;
  const size_t bytes = static_cast<size_t>(bytesArg) / 2 * 2;
  const int reps = argInt(info, 1, 20);
  FERRUM_CUDA(cudaSetDevice(argInt(info, 2, 0)));
  DeviceBuffer src(bytes), dst(bytes);
  launchFillUniform(src.as<bf16>(), bytes / 2, 7, 1.f, nullptr);
  const double seconds = medianSeconds(reps, nullptr, [&] {
    FERRUM_CUDA(cudaMemcpyAsync(dst.as(), src.as(), bytes, cudaMemcpyDeviceToDevice, nullptr));
  });
  return Napi::Number::New(info.Env(), 2.0 * static_cast<double>(bytes) / seconds);
}

Napi::Value gemmRate(const Napi::CallbackInfo& info) {
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
  return Napi::Number::New(info.Env(), 2.0 * m * static_cast<double>(n) * k / seconds);
}

// A runGemm path: Gemm's (`auto`, `tuned`, `shared`, `cublas`, `skinny`), the GEMV at one of its block sizes
// (`gemv16`, ...), or the gated product with SwiGLU fused (`swiglu`: Gemm's choice, `swiglu16`, ...: a GEMV block
// size).
struct GemmChoice {
  GemmPath path = GemmPath::kAuto;
  int gemvRows = 0;  // > 0: the GEMV at this block size
  bool swiglu = false;
};

GemmChoice gemmChoice(const std::string& name) {
  if (name == "auto" || name == "tuned" || name == "shared") return {};
  if (name == "cublas") return {GemmPath::kCublas, 0};
  if (name == "skinny") return {GemmPath::kSkinny, 0};
  if (name == "swiglu") return {GemmPath::kAuto, 0, true};
  for (const char* prefix : {"gemv", "swiglu"}) {
    const std::string head(prefix);
    const std::string digits = name.substr(std::min(head.size(), name.size()));
    if (name.compare(0, head.size(), head) != 0 || digits.empty() || digits.size() > 3 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    return {GemmPath::kAuto, std::stoi(digits), head == "swiglu"};
  }
  throw NativeError("invalid_argument", "runGemm: path must be 'auto', 'tuned', 'shared', 'cublas', 'swiglu', "
                                        "'gemv<rows>' or 'swiglu<rows>', not '" + name + "'");
}

// Argument i of hook `hook`, named `name`: a Uint16Array of `length` bf16 bits.
Napi::Uint16Array bf16Arg(const Napi::CallbackInfo& info, size_t i, size_t length, const char* hook, const char* name) {
  const std::string label = std::string(hook) + ": " + name;
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint16_array) {
    throw NativeError("invalid_argument", label + " must be a Uint16Array of bf16 bits");
  }
  Napi::Uint16Array array = info[i].As<Napi::Uint16Array>();
  if (array.ElementLength() != length) {
    throw NativeError("invalid_argument", label + " must hold " + std::to_string(length) + " values, not " +
                                              std::to_string(array.ElementLength()));
  }
  return array;
}

// `count` bf16 values of a device buffer, widened to f32 (exactly).
Napi::Float32Array widenedBf16(Napi::Env env, const DeviceBuffer& buffer, size_t count) {
  std::vector<uint16_t> bits(count);
  FERRUM_CUDA(cudaMemcpy(bits.data(), buffer.as(), count * 2, cudaMemcpyDeviceToHost));
  Napi::Float32Array out = Napi::Float32Array::New(env, count);
  for (size_t i = 0; i < count; i++) {
    const uint32_t widened = static_cast<uint32_t>(bits[i]) << 16;  // bf16 -> f32 is exact
    std::memcpy(out.Data() + i, &widened, sizeof(widened));
  }
  return out;
}

// The product on fresh device buffers; timed runs start with the weights cold in L2 (a larger-than-L2 buffer
// is overwritten before each), as in a model, where a layer's weights are long evicted when they come round.
Napi::Value runGemm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string name = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  const GemmChoice choice = gemmChoice(name);
  const int m = argInt(info, 3, -1), n = argInt(info, 4, -1), k = argInt(info, 5, -1);
  if (m < 1 || n < 1 || k < 1) throw NativeError("invalid_argument", "runGemm: m, n and k must be positive");
  Napi::Uint16Array xHost = bf16Arg(info, 1, static_cast<size_t>(m) * k, "runGemm", "x");
  Napi::Uint16Array wHost = bf16Arg(info, 2, static_cast<size_t>(n) * k, "runGemm", "w");
  const bool outF32 = info.Length() > 6 && info[6].ToBoolean().Value();
  const int reps = argInt(info, 7, 0);
  const int device = argInt(info, 8, 0);
  FERRUM_CUDA(cudaSetDevice(device));
  if (choice.swiglu && (outF32 || n % 2 != 0)) {
    throw NativeError("invalid_argument", "runGemm: a swiglu path takes an even n (gate|up rows) and a bf16 output");
  }
  const int outCols = choice.swiglu ? n / 2 : n;
  const size_t outCount = static_cast<size_t>(m) * outCols;
  const size_t workspaceBytes = 32u << 20;
  DeviceBuffer x(xHost.ByteLength()), w(wHost.ByteLength()), y(outCount * (outF32 ? 4 : 2)), workspace(workspaceBytes);
  Gemm gemm(workspace.as(), workspaceBytes);
  if (choice.gemvRows > 0 && !gemvSupports(x.as<bf16>(), w.as<bf16>(), m, k)) {
    throw NativeError("invalid_argument", "runGemm: the GEMV takes 1.." + std::to_string(kGemvMaxRows) +
                                              " rows and k % 8 == 0");
  }
  if (choice.swiglu && !gemm.fusesSwiglu(x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), m, outCols, k)) {
    throw NativeError("invalid_argument", "runGemm: no kernel here fuses SwiGLU into a product of " +
                                              std::to_string(m) + " rows, " + std::to_string(outCols) +
                                              " outputs and k = " + std::to_string(k));
  }
  const std::vector<int> blockSizes = gemvRowsPerBlock(m, choice.swiglu);
  if (choice.gemvRows > 0 && std::find(blockSizes.begin(), blockSizes.end(), choice.gemvRows) == blockSizes.end()) {
    throw NativeError("invalid_argument", "runGemm: the GEMV takes no block of " + std::to_string(choice.gemvRows) +
                                              " outputs at " + std::to_string(m) + " rows");
  }
  FERRUM_CUDA(cudaMemcpy(x.as(), xHost.Data(), x.bytes(), cudaMemcpyHostToDevice));
  FERRUM_CUDA(cudaMemcpy(w.as(), wHost.Data(), w.bytes(), cudaMemcpyHostToDevice));
  if (choice.swiglu && choice.gemvRows == 0) gemm.tuneSwiglu(x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), m, outCols, k, nullptr);
  if (name == "tuned") gemm.tune(x.as<bf16>(), w.as<bf16>(), y.as(), m, n, k, outF32, nullptr);
  if (name == "shared") {
    // Tuned at more rows than m, on scratch operands of that many rows: the run at m then takes that algorithm.
    int tunedRows = kSharedTuningMinRows;
    while (tunedRows <= m) tunedRows *= 2;
    DeviceBuffer xs(static_cast<size_t>(tunedRows) * k * 2), ys(static_cast<size_t>(tunedRows) * n * (outF32 ? 4 : 2));
    FERRUM_CUDA(cudaMemset(xs.as(), 0, xs.bytes()));
    gemm.tune(xs.as<bf16>(), w.as<bf16>(), ys.as(), tunedRows, n, k, outF32, nullptr);
  }
  auto once = [&] {
    if (choice.swiglu && choice.gemvRows > 0) {
      launchGemvSwiglu(x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), m, outCols, k, choice.gemvRows, nullptr);
    } else if (choice.swiglu) {
      gemm.runSwiglu(x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), m, outCols, k, nullptr);
    } else if (choice.gemvRows > 0) {
      launchGemv(x.as<bf16>(), w.as<bf16>(), y.as(), m, n, k, outF32, choice.gemvRows, nullptr);
    } else {
      gemm.runVia(choice.path, x.as<bf16>(), w.as<bf16>(), y.as(), m, n, k, outF32, nullptr);
    }
  };
  double seconds = 0;
  if (reps > 0) {
    int l2Bytes = 0;
    FERRUM_CUDA(cudaDeviceGetAttribute(&l2Bytes, cudaDevAttrL2CacheSize, device));
    DeviceBuffer flush(2 * static_cast<size_t>(l2Bytes));
    seconds = medianSeconds(reps, nullptr, once,
                            [&] { FERRUM_CUDA(cudaMemsetAsync(flush.as(), 1, flush.bytes(), nullptr)); });
  }
  once();  // the output of a plain run, whatever timing left in y
  Napi::Float32Array output;
  if (outF32) {
    output = Napi::Float32Array::New(env, outCount);
    FERRUM_CUDA(cudaMemcpy(output.Data(), y.as(), y.bytes(), cudaMemcpyDeviceToHost));
  } else {
    output = widenedBf16(env, y, outCount);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("output", output);
  result.Set("medianSeconds", seconds);
  return result;
}

Napi::Value runAddRmsNorm(const Napi::CallbackInfo& info) {
  const int rows = argInt(info, 3, -1), hidden = argInt(info, 4, -1);
  if (rows < 1 || hidden < 1) throw NativeError("invalid_argument", "runAddRmsNorm: rows and hidden must be positive");
  if (info.Length() <= 5 || !info[5].IsNumber()) {
    throw NativeError("invalid_argument", "runAddRmsNorm: eps must be a number");
  }
  const size_t count = static_cast<size_t>(rows) * hidden;
  Napi::Uint16Array residualHost = bf16Arg(info, 0, count, "runAddRmsNorm", "residual");
  Napi::Uint16Array deltaHost = bf16Arg(info, 1, count, "runAddRmsNorm", "delta");
  Napi::Uint16Array weightHost = bf16Arg(info, 2, hidden, "runAddRmsNorm", "weight");
  const float eps = info[5].As<Napi::Number>().FloatValue();
  FERRUM_CUDA(cudaSetDevice(argInt(info, 6, 0)));
  DeviceBuffer residual(count * 2), delta(count * 2), weight(static_cast<size_t>(hidden) * 2), out(count * 2);
  FERRUM_CUDA(cudaMemcpy(residual.as(), residualHost.Data(), residual.bytes(), cudaMemcpyHostToDevice));
  FERRUM_CUDA(cudaMemcpy(delta.as(), deltaHost.Data(), delta.bytes(), cudaMemcpyHostToDevice));
  FERRUM_CUDA(cudaMemcpy(weight.as(), weightHost.Data(), weight.bytes(), cudaMemcpyHostToDevice));
  launchAddRmsNorm(residual.as<bf16>(), delta.as<bf16>(), nullptr, nullptr, weight.as<bf16>(), out.as<bf16>(), rows,
                   hidden, eps, nullptr);
  FERRUM_CUDA(cudaDeviceSynchronize());
  Napi::Object result = Napi::Object::New(info.Env());
  result.Set("residual", widenedBf16(info.Env(), residual, count));
  result.Set("output", widenedBf16(info.Env(), out, count));
  return result;
}

Napi::Value profilerRange(const Napi::CallbackInfo& info) {
  const bool on = info.Length() > 0 && info[0].ToBoolean().Value();
  FERRUM_CUDA(cudaDeviceSynchronize());  // the range holds exactly the launches made inside it
  FERRUM_CUDA(on ? cudaProfilerStart() : cudaProfilerStop());
  return info.Env().Undefined();
}

}  // namespace

Napi::Value MeasureBandwidth(const Napi::CallbackInfo& info) { return guarded(info, bandwidth); }
Napi::Value MeasureGemmRate(const Napi::CallbackInfo& info) { return guarded(info, gemmRate); }

Napi::Value RunGemm(const Napi::CallbackInfo& info) { return guarded(info, runGemm); }
Napi::Value RunAddRmsNorm(const Napi::CallbackInfo& info) { return guarded(info, runAddRmsNorm); }
Napi::Value ProfilerRange(const Napi::CallbackInfo& info) { return guarded(info, profilerRange); }

}  // namespace ferrum
