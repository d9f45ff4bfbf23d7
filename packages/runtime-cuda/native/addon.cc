// Module registration: probe() and loadModel(spec), both asynchronous (libuv worker + Promise).
#include <napi.h>

#include <memory>
#include <string>

#include "device-bench.h"
#include "device-probe.h"
#include "load-spec.h"
#include "napi-values.h"
#include "native-executor.h"

namespace ferrum {
namespace {

class ProbeWorker : public Napi::AsyncWorker {
 public:
  explicit ProbeWorker(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override { result_ = probeDevice(0); }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("available", result_.available);
    out.Set("reason", result_.reason);
    out.Set("name", result_.name);
    out.Set("computeCapability", std::to_string(result_.major) + "." + std::to_string(result_.minor));
    out.Set("totalMemoryBytes", static_cast<double>(result_.totalBytes));
    out.Set("freeMemoryBytes", static_cast<double>(result_.freeBytes));
    out.Set("multiProcessorCount", result_.multiProcessors);
    out.Set("driverVersion", result_.driverVersion);
    out.Set("runtimeVersion", result_.runtimeVersion);
    out.Set("builtArchitectures", FERRUM_CUDA_ARCHS);
    deferred_.Resolve(out);
  }

 private:
  Napi::Promise::Deferred deferred_;
  DeviceProbe result_;
};

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, RunnerConfig config)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), config_(std::move(config)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      runner_ = std::make_unique<ModelRunner>(std::move(config_));
    } catch (const NativeError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::exception& e) {
      code_ = "internal";
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(NativeExecutor::Create(Env(), std::move(runner_))); }
  void OnError(const Napi::Error& error) override {
    deferred_.Reject(makeError(Env(), code_.empty() ? "internal" : code_, error.Message()).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  RunnerConfig config_;
  std::unique_ptr<ModelRunner> runner_;
  std::string code_;
};

Napi::Value Probe(const Napi::CallbackInfo& info) {
  auto* worker = new ProbeWorker(info.Env());
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (info.Length() < 1 || !info[0].IsObject()) throw NativeError("invalid_argument", "loadModel: spec must be an object");
    auto* worker = new LoadWorker(env, parseLoadSpec(info[0].As<Napi::Object>()));
    Napi::Promise promise = worker->promise();
    worker->Queue();
    return promise;
  } catch (const NativeError& e) {
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    deferred.Reject(makeError(env, e.code(), e.what()).Value());
    return deferred.Promise();
  }
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  NativeExecutor::Init(env);
  exports.Set("probe", Napi::Function::New(env, Probe));
  exports.Set("loadModel", Napi::Function::New(env, LoadModel));
  exports.Set("measureBandwidth", Napi::Function::New(env, MeasureBandwidth));
  exports.Set("measureGemmRate", Napi::Function::New(env, MeasureGemmRate));
  exports.Set("runGemm", Napi::Function::New(env, RunGemm));
  exports.Set("runAddRmsNorm", Napi::Function::New(env, RunAddRmsNorm));
  exports.Set("profilerRange", Napi::Function::New(env, ProfilerRange));
  return exports;
}

}  // namespace
}  // namespace ferrum

static Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return ferrum::Init(env, exports); }

NODE_API_MODULE(ferrum_cuda, InitAddon)
