// Module registration: probe(), loadModel(), runElementwise() and the NativeModel class.
#include <napi.h>

#include <memory>

#include "async-task.h"
#include "cpu-features.h"
#include "napi-args.h"
#include "native-error.h"
#include "native-model.h"

namespace ferrum {
namespace {

Napi::Array strings(Napi::Env env, const std::vector<std::string>& values) {
  Napi::Array out = Napi::Array::New(env, values.size());
  for (uint32_t i = 0; i < values.size(); ++i) out.Set(i, values[i]);
  return out;
}

// probe(): { simd, bf16Simd, usableSimd, features, numCpus }; cheap and never throws.
Napi::Value probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  const std::vector<std::string> usable = usableKernelNames();
  out.Set("simd", defaultKernels(false, 0)->name);
  out.Set("bf16Simd", defaultKernels(true, 0)->name);
  out.Set("usableSimd", strings(env, usable));
  out.Set("features", strings(env, cpuFeatures()));
  out.Set("numCpus", usableCpuCount());
  return out;
}

// loadModel(options): Promise<NativeModel>; the weights are read on a libuv thread.
Napi::Value loadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto options = std::make_shared<ModelOptions>();
  try {
    if (!info[0].IsObject()) throw NativeError("invalid_argument", "loadModel needs an options object");
    *options = parseModelOptions(info[0].As<Napi::Object>());
  } catch (const NativeError& error) {
    return rejectedPromise(env, error.code(), error.what());
  }
  auto loaded = std::make_shared<std::shared_ptr<Model>>();
  return AsyncTask::start(
      env, [options, loaded] { *loaded = std::make_shared<Model>(*options); },
      [loaded](Napi::Env resultEnv) -> Napi::Value { return NativeModel::wrap(resultEnv, *loaded); }, {});
}

// runElementwise(simd, op, x, arg?): one table's softmax(x) or siluMul(x, up = arg), in place, or sumExp(x, shift = arg),
// on the calling thread.
Napi::Value runElementwise(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const KernelTable* table = info[0].IsString() ? kernelsByName(info[0].As<Napi::String>()) : nullptr;
  const std::string op = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  if (table == nullptr || !info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    throw Napi::TypeError::New(env, "runElementwise(simd, op, x, up?): a usable path and a Float32Array");
  }
  Napi::Float32Array x = info[2].As<Napi::Float32Array>();
  const int n = static_cast<int>(x.ElementLength());
  if (op == "softmax" && n > 0) {
    table->softmax(x.Data(), n);
  } else if (op == "sumExp" && info[3].IsNumber()) {
    return Napi::Number::New(env, table->sumExp(x.Data(), n, info[3].As<Napi::Number>().FloatValue()));
  } else if (op == "siluMul" && info[3].IsTypedArray() &&
             info[3].As<Napi::TypedArray>().TypedArrayType() == napi_float32_array &&
             info[3].As<Napi::Float32Array>().ElementLength() == x.ElementLength()) {
    table->siluMul(x.Data(), info[3].As<Napi::Float32Array>().Data(), n);
  } else {
    throw Napi::TypeError::New(env,
                               "runElementwise: op softmax (a non-empty x), siluMul (up as long as x) or sumExp (a shift)");
  }
  return env.Undefined();
}

Napi::Object init(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, probe, "probe"));
  exports.Set("runElementwise", Napi::Function::New(env, runElementwise, "runElementwise"));
  exports.Set("loadModel", Napi::Function::New(env, loadModel, "loadModel"));
  NativeModel::define(env, exports);
  return exports;
}

}  // namespace
}  // namespace ferrum

// NODE_API_MODULE pastes its second argument into an identifier, so it must be unqualified.
static Napi::Object InitFerrumCpu(Napi::Env env, Napi::Object exports) { return ferrum::init(env, exports); }

NODE_API_MODULE(ferrum_cpu, InitFerrumCpu)
