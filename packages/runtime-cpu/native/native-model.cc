#include "native-model.h"

#include <vector>

#include "async-task.h"
#include "napi-args.h"
#include "native-error.h"

namespace ferrum {
namespace {

struct AddonData {
  Napi::FunctionReference constructor;
};

// The object arguments (typed arrays) of a call; Node-API 8 references only objects.
std::vector<Napi::Value> objectArguments(const Napi::CallbackInfo& info) {
  std::vector<Napi::Value> values;
  for (size_t i = 0; i < info.Length(); ++i) {
    if (info[i].IsObject()) values.push_back(info[i]);
  }
  return values;
}

}  // namespace

void NativeModel::define(Napi::Env env, Napi::Object exports) {
  Napi::Function constructor = DefineClass(env, "NativeModel",
                                           {InstanceMethod("forward", &NativeModel::forward),
                                            InstanceMethod("copySlots", &NativeModel::copySlots),
                                            InstanceMethod("swapOut", &NativeModel::swapOut),
                                            InstanceMethod("swapIn", &NativeModel::swapIn),
                                            InstanceMethod("describe", &NativeModel::describe),
                                            InstanceMethod("dispose", &NativeModel::dispose)});
  auto* data = new AddonData{Napi::Persistent(constructor)};
  env.SetInstanceData<AddonData>(data);
  exports.Set("NativeModel", constructor);
}

Napi::Object NativeModel::wrap(Napi::Env env, std::shared_ptr<Model> model) {
  auto* holder = new std::shared_ptr<Model>(std::move(model));
  Napi::External<std::shared_ptr<Model>> external = Napi::External<std::shared_ptr<Model>>::New(
      env, holder, [](Napi::Env, std::shared_ptr<Model>* pointer) { delete pointer; });
  return env.GetInstanceData<AddonData>()->constructor.New({external});
}

NativeModel::NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeModel is created by loadModel()");
  }
  model_ = *info[0].As<Napi::External<std::shared_ptr<Model>>>().Data();
}

// forward(tokenIds, positions, qIndptr, kvIndptr, kvIndices, slotMapping, sampleRows, rowModes,
//         numSeqs, numTokens, outTokens, outLogprobs, outLogits)
Napi::Value NativeModel::forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Model> model = model_;
  if (!model) return rejectedPromise(env, "invalid_argument", "the model was disposed");
  BatchView batch;
  try {
    batch.tokenIds = int32Span(info[0], "tokenIds");
    batch.positions = int32Span(info[1], "positions");
    batch.qIndptr = int32Span(info[2], "qIndptr");
    batch.kvIndptr = int32Span(info[3], "kvIndptr");
    batch.kvIndices = int32Span(info[4], "kvIndices");
    batch.slotMapping = int32Span(info[5], "slotMapping");
    batch.sampleRows = int32Span(info[6], "sampleRows");
    batch.rowModes = int32Span(info[7], "rowModes");
    batch.numSeqs = static_cast<int>(integerArg(info[8], "numSeqs", 0, INT32_MAX));
    batch.numTokens = static_cast<int>(integerArg(info[9], "numTokens", 0, INT32_MAX));
    const MutableSpan<int32_t> tokens = mutableInt32(info[10], "outTokens");
    const MutableSpan<float> logprobs = mutableFloat32(info[11], "outLogprobs");
    const MutableSpan<float> logits = mutableFloat32(info[12], "outLogits");
    batch.outTokens = tokens.data, batch.outTokensLength = tokens.length;
    batch.outLogprobs = logprobs.data, batch.outLogprobsLength = logprobs.length;
    batch.outLogits = logits.data, batch.outLogitsLength = logits.length;
  } catch (const NativeError& error) {
    return rejectedPromise(env, error.code(), error.what());
  }
  const std::string problem = validateBatch(batch, model->limits());
  if (!problem.empty()) return rejectedPromise(env, "invalid_argument", problem);
  return AsyncTask::start(
      env,
      [model, batch] {
        std::lock_guard<std::mutex> lock(model->mutex());
        model->forward(batch);
      },
      nullptr, objectArguments(info));
}

// copySlots(src, dst) / swapOut(deviceSlots, hostSlots) / swapIn(hostSlots, deviceSlots)
Napi::Value NativeModel::transfer(const Napi::CallbackInfo& info, Transfer kind) {
  Napi::Env env = info.Env();
  std::shared_ptr<Model> model = model_;
  if (!model) return rejectedPromise(env, "invalid_argument", "the model was disposed");
  const int device = model->kv().numSlots(), host = model->kv().numHostSlots();
  const char* names[2] = {"src", "dst"};
  int limits[2] = {device, device};
  if (kind == Transfer::SwapOut) names[0] = "deviceSlots", names[1] = "hostSlots", limits[1] = host;
  if (kind == Transfer::SwapIn) names[0] = "hostSlots", names[1] = "deviceSlots", limits[0] = host;
  Int32Span from, to;
  try {
    from = int32Span(info[0], names[0]);
    to = int32Span(info[1], names[1]);
  } catch (const NativeError& error) {
    return rejectedPromise(env, error.code(), error.what());
  }
  if (from.length != to.length) {
    return rejectedPromise(env, "invalid_argument",
                           std::string(names[0]) + " and " + names[1] + " must have the same length");
  }
  std::string problem = KvPool::checkSlots(from.data, from.length, limits[0], names[0]);
  if (problem.empty()) problem = KvPool::checkSlots(to.data, to.length, limits[1], names[1]);
  if (!problem.empty()) return rejectedPromise(env, "invalid_argument", problem);
  return AsyncTask::start(
      env,
      [model, from, to, kind] {
        std::lock_guard<std::mutex> lock(model->mutex());
        const int count = static_cast<int>(from.length);
        if (kind == Transfer::Copy) model->kv().copySlots(from.data, to.data, count, model->pool());
        if (kind == Transfer::SwapOut) model->kv().swapOut(from.data, to.data, count, model->pool());
        if (kind == Transfer::SwapIn) model->kv().swapIn(from.data, to.data, count, model->pool());
      },
      nullptr, objectArguments(info));
}

Napi::Value NativeModel::describe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!model_) throw makeCodedError(env, "invalid_argument", "the model was disposed");
  Napi::Object out = Napi::Object::New(env);
  out.Set("simd", model_->kernels().name);
  out.Set("numThreads", model_->numThreads());
  out.Set("numSlots", model_->kv().numSlots());
  out.Set("numHostSlots", model_->kv().numHostSlots());
  out.Set("weightBytes", static_cast<double>(model_->weightBytes()));
  return out;
}

Napi::Value NativeModel::dispose(const Napi::CallbackInfo& info) {
  model_.reset();
  return info.Env().Undefined();
}

}  // namespace ferrum
