#include "native-executor.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "host-spin.h"
#include "napi-values.h"

namespace ferrum {

struct NativeExecutor::Completion {
  Napi::Promise::Deferred deferred;
  std::function<Napi::Value(Napi::Env)> value;
  bool isForward;
  std::string errorCode, errorMessage;
};

namespace {

StepView parseStep(const Napi::Object& b) {
  StepView v;
  v.tokenIds = ints(b, "tokenIds");
  v.positions = ints(b, "positions");
  v.qIndptr = ints(b, "qIndptr");
  v.kvIndptr = ints(b, "kvIndptr");
  v.kvIndices = ints(b, "kvIndices");
  v.slotMapping = ints(b, "slotMapping");
  v.sampleRows = ints(b, "sampleRows");
  v.numSeqs = static_cast<int>(number(b, "numSeqs"));
  v.numTokens = static_cast<int>(number(b, "numTokens"));
  Napi::Value sampling = b.Get("sampling");
  v.hasSampling = sampling.IsObject();
  if (v.hasSampling) {
    Napi::Object s = sampling.As<Napi::Object>();
    v.rowFloats = floats(s, "rowFloats");
    v.rowInts = ints(s, "rowInts");
    v.adjOffsets = ints(s, "adjOffsets");
    v.adjIds = ints(s, "adjIds");
    v.adjPre = floats(s, "adjPre");
    v.adjPost = floats(s, "adjPost");
    v.adjFlags = ints(s, "adjFlags");
    v.allowedOffsets = ints(s, "allowedOffsets");
    v.allowedIds = ints(s, "allowedIds");
  }
  Napi::Value previous = b.Get("previousTokens");
  if (previous.IsObject()) {
    Napi::Object p = previous.As<Napi::Object>();
    v.previousRows = ints(p, "rows");
    v.previousSampleIndices = ints(p, "sampleIndices");
  }
  return v;
}

std::vector<int> toVector(const Span<int>& span) { return std::vector<int>(span.data, span.data + span.size); }

}  // namespace

void NativeExecutor::Init(Napi::Env env) {
  Napi::Function ctor = DefineClass(env, "NativeExecutor",
                                    {InstanceMethod<&NativeExecutor::Forward>("forward"),
                                     InstanceMethod<&NativeExecutor::CopySlots>("copySlots"),
                                     InstanceMethod<&NativeExecutor::SwapOut>("swapOut"),
                                     InstanceMethod<&NativeExecutor::SwapIn>("swapIn"),
                                     InstanceMethod<&NativeExecutor::Dispose>("dispose"),
                                     InstanceMethod<&NativeExecutor::Info>("info"),
                                     InstanceMethod<&NativeExecutor::SpinUntilSettled>("spinUntilSettled")});
  env.SetInstanceData<Napi::FunctionReference>(new Napi::FunctionReference(Napi::Persistent(ctor)));
}

Napi::Object NativeExecutor::Create(Napi::Env env, std::unique_ptr<ModelRunner> runner) {
  Napi::FunctionReference* ctor = env.GetInstanceData<Napi::FunctionReference>();
  return ctor->New({Napi::External<ModelRunner>::New(env, runner.release())});
}

NativeExecutor::NativeExecutor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeExecutor>(info) {
  if (info.Length() != 1 || !info[0].IsExternal()) {
    throw Napi::TypeError::New(info.Env(), "NativeExecutor is created by loadModel()");
  }
  runner_.reset(info[0].As<Napi::External<ModelRunner>>().Data());
  // The worker polls between steps, so that a forward's launch does not wait for a sleeping thread; the
  // completion thread polls on each step's event instead (model-runner.cc).
  queue_ = std::make_unique<TaskQueue>(runner_->spinWait() ? kWorkerSpinAfterTask : std::chrono::microseconds(0));
  waiter_ = std::make_unique<TaskQueue>();
  completions_ = Napi::ThreadSafeFunction::New(info.Env(), Napi::Function::New(info.Env(), [](const Napi::CallbackInfo&) {}),
                                               "ferrum-cuda-completion", 0, 1);
  completions_.Unref(info.Env());  // referenced only while work is pending, so an idle executor lets Node exit
}

NativeExecutor::~NativeExecutor() { shutDown(); }

void NativeExecutor::shutDown() {
  if (!queue_) return;
  queue_.reset();  // drains (nothing is pending: the object is referenced while work is) and joins
  waiter_.reset();  // after the worker, which feeds it
  runner_.reset();
  completions_.Release();
}

namespace {

// Runs `task` (when set), recording what it throws in `completion`; false when it threw.
template <typename Completion>
bool attempt(Completion* completion, const std::function<void()>& task) {
  if (!task) return true;
  try {
    task();
    return true;
  } catch (const NativeError& e) {
    completion->errorCode = e.code();
    completion->errorMessage = e.what();
  } catch (const std::exception& e) {
    completion->errorCode = "internal";
    completion->errorMessage = e.what();
  }
  return false;
}

}  // namespace

void NativeExecutor::submit(Napi::Env env, Napi::Promise::Deferred deferred, std::function<void()> work,
                            std::function<void()> wait, std::function<Napi::Value(Napi::Env)> value,
                            bool isForward, std::function<void()> after) {
  if (pending_++ == 0) {
    Ref();
    completions_.Ref(env);
  }
  auto* completion = new Completion{deferred, std::move(value), isForward, {}, {}};
  queue_->push([this, completion, work = std::move(work), wait = std::move(wait), after = std::move(after)]() mutable {
    const bool launched = attempt(completion, work);
    // The wait goes to the completion thread, so the worker is free to launch a step queued behind this one.
    waiter_->push([this, completion, launched, wait = std::move(wait)] {
      if (launched) attempt(completion, wait);
      settled_.fetch_add(1, std::memory_order_release);
      completions_.BlockingCall(completion, [this](Napi::Env env, Napi::Function, Completion* c) { complete(env, c); });
    });
    if (launched && after) {
      try {
        after();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "runtime-cuda: %s\n", e.what());
      }
    }
  });
}

void NativeExecutor::complete(Napi::Env env, Completion* c) {
  Napi::HandleScope scope(env);
  settled_.fetch_sub(1, std::memory_order_relaxed);
  if (c->isForward) forwardsInFlight_--;
  if (c->errorCode.empty()) {
    c->deferred.Resolve(c->value ? c->value(env) : env.Undefined());
  } else {
    c->deferred.Reject(makeError(env, c->errorCode, c->errorMessage).Value());
  }
  delete c;
  if (--pending_ == 0) {
    completions_.Unref(env);
    if (disposed_) shutDown();
    Unref();
  }
}

Napi::Value NativeExecutor::Forward(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  int staged = 0;
  try {
    if (disposed_) throw NativeError("invalid_argument", "forward: the executor is disposed");
    // Two staging areas: step N + 1 may be staged while step N runs (overlap scheduling), no further.
    if (forwardsInFlight_ >= 2) throw NativeError("invalid_argument", "forward: two steps are already in flight");
    if (info.Length() < 1 || !info[0].IsObject()) throw NativeError("invalid_argument", "forward: batch must be an object");
    staged = runner_->stage(parseStep(info[0].As<Napi::Object>()), forwardsInFlight_ > 0);
  } catch (const NativeError& e) {
    deferred.Reject(makeError(env, e.code(), e.what()).Value());
    return deferred.Promise();
  }
  forwardsInFlight_++;
  ModelRunner* runner = runner_.get();
  submit(env, deferred, [runner, staged] { runner->launch(staged); }, [runner, staged] { runner->finish(staged); },
         [this, staged](Napi::Env e) { return forwardResult(e, staged); }, true,
         [runner] { runner->captureRepeatedStep(); });
  return deferred.Promise();
}

Napi::Value NativeExecutor::forwardResult(Napi::Env env, int staged) {
  const StepLayout& L = runner_->layout(staged);
  const size_t S = static_cast<size_t>(L.numSampled);
  const size_t V = static_cast<size_t>(runner_->shape().vocabSize);
  Napi::Object result = Napi::Object::New(env);
  Napi::Int32Array tokens = Napi::Int32Array::New(env, S);
  if (L.sampling) {
    std::memcpy(tokens.Data(), runner_->sampledTokens(staged), S * sizeof(int));
    Napi::Float32Array logprobs = Napi::Float32Array::New(env, S);
    std::memcpy(logprobs.Data(), runner_->sampledLogprobs(staged), S * sizeof(float));
    result.Set("logprobs", logprobs);
    if (L.topLogprobs) {
      const size_t entries = S * kMaxTopLogprobs;
      Napi::Object top = Napi::Object::New(env);
      Napi::Int32Array ids = Napi::Int32Array::New(env, entries);
      std::memcpy(ids.Data(), runner_->topIds(staged), entries * sizeof(int));
      Napi::Float32Array values = Napi::Float32Array::New(env, entries);
      std::memcpy(values.Data(), runner_->topLogprobs(staged), entries * sizeof(float));
      top.Set("tokenIds", ids);
      top.Set("logprobs", values);
      result.Set("topLogprobs", top);
    }
  } else {
    for (size_t i = 0; i < S; i++) tokens[i] = -1;
  }
  result.Set("tokens", tokens);
  const size_t numLogitRows = L.hostLogitRows.size();
  if (numLogitRows > 0) {
    Napi::Float32Array logits = Napi::Float32Array::New(env, numLogitRows * V);
    std::memcpy(logits.Data(), runner_->hostLogits(), numLogitRows * V * sizeof(float));
    Napi::Int32Array rows = Napi::Int32Array::New(env, numLogitRows);
    std::memcpy(rows.Data(), L.hostLogitRows.data(), numLogitRows * sizeof(int));
    result.Set("logits", logits);
    result.Set("logitsRows", rows);
  }
  return result;
}

Napi::Value NativeExecutor::transfer(const Napi::CallbackInfo& info, KvTransfer kind) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  std::vector<int> src, dst;
  try {
    if (disposed_) throw NativeError("invalid_argument", "slot transfer: the executor is disposed");
    Napi::Object args = Napi::Object::New(env);
    args.Set("src", info[0]);
    args.Set("dst", info[1]);
    src = toVector(ints(args, "src"));
    dst = toVector(ints(args, "dst"));
    runner_->checkTransfer(kind, src, dst);
  } catch (const NativeError& e) {
    deferred.Reject(makeError(env, e.code(), e.what()).Value());
    return deferred.Promise();
  }
  ModelRunner* runner = runner_.get();
  submit(env, deferred,
         [runner, kind, src = std::move(src), dst = std::move(dst)] { runner->transfer(kind, src, dst); }, nullptr,
         nullptr, false);
  return deferred.Promise();
}

Napi::Value NativeExecutor::CopySlots(const Napi::CallbackInfo& info) { return transfer(info, KvTransfer::kCopy); }
Napi::Value NativeExecutor::SwapOut(const Napi::CallbackInfo& info) { return transfer(info, KvTransfer::kSwapOut); }
Napi::Value NativeExecutor::SwapIn(const Napi::CallbackInfo& info) { return transfer(info, KvTransfer::kSwapIn); }

Napi::Value NativeExecutor::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  if (disposed_) {
    deferred.Resolve(env.Undefined());
    return deferred.Promise();
  }
  disposed_ = true;
  // Freed on the completion thread after every queued step has completed; the threads are joined once nothing
  // is pending.
  submit(env, deferred, nullptr, [this] { runner_.reset(); }, nullptr, false);
  return deferred.Promise();
}

Napi::Value NativeExecutor::Info(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  if (!runner_) return out;
  out.Set("numSlots", Napi::Number::New(env, static_cast<double>(runner_->numSlots())));
  out.Set("numHostSlots", Napi::Number::New(env, static_cast<double>(runner_->numHostSlots())));
  out.Set("weightBytes", Napi::Number::New(env, static_cast<double>(runner_->weightBytes())));
  out.Set("kvPoolBytes", Napi::Number::New(env, static_cast<double>(runner_->kvPoolBytes())));
  out.Set("graphSteps", Napi::Number::New(env, static_cast<double>(runner_->graphSteps())));
  out.Set("clusterMergedLaunches", Napi::Number::New(env, static_cast<double>(runner_->clusterMergedLaunches())));
  out.Set("graphsCaptured", Napi::Number::New(env, static_cast<double>(runner_->graphsCaptured())));
  out.Set("stepGraphSteps", Napi::Number::New(env, static_cast<double>(runner_->stepGraphSteps())));
  out.Set("stepGraphsCaptured", Napi::Number::New(env, static_cast<double>(runner_->stepGraphsCaptured())));
  out.Set("spinWait", Napi::Boolean::New(env, runner_->spinWait()));
  out.Set("gpuStepSeconds", Napi::Number::New(env, static_cast<double>(runner_->gpuStepNanos()) / 1e9));
  return out;
}

Napi::Value NativeExecutor::SpinUntilSettled(const Napi::CallbackInfo& info) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(static_cast<long>(info[0].As<Napi::Number>().DoubleValue()));
  while (settled_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) cpuRelax();
  return Napi::Boolean::New(info.Env(), settled_.load(std::memory_order_relaxed) > 0);
}

}  // namespace ferrum
