#include "async-task.h"

#include <new>

#include "native-error.h"

namespace ferrum {

Napi::Error makeCodedError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

Napi::Promise rejectedPromise(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
  deferred.Reject(makeCodedError(env, code, message).Value());
  return deferred.Promise();
}

AsyncTask::AsyncTask(Napi::Env env, Work work, Result result)
    : Napi::AsyncWorker(env, "ferrum-cpu"),
      work_(std::move(work)),
      result_(std::move(result)),
      deferred_(Napi::Promise::Deferred::New(env)) {}

Napi::Promise AsyncTask::start(Napi::Env env, Work work, Result result, const std::vector<Napi::Value>& keepAlive) {
  auto* task = new AsyncTask(env, std::move(work), std::move(result));  // deleted by node-addon-api when settled
  task->keepAlive_.reserve(keepAlive.size());
  for (const Napi::Value& value : keepAlive) task->keepAlive_.push_back(Napi::Persistent(value));
  Napi::Promise promise = task->deferred_.Promise();
  task->Queue();
  return promise;
}

void AsyncTask::Execute() {
  try {
    work_();
  } catch (const NativeError& error) {
    errorCode_ = error.code();
    SetError(error.what());
  } catch (const std::bad_alloc&) {
    errorCode_ = "out_of_memory";
    SetError("out of memory");
  } catch (const std::exception& error) {
    errorCode_ = "internal";
    SetError(error.what());
  }
}

void AsyncTask::OnOK() {
  Napi::Env env = Env();
  if (!result_) {
    deferred_.Resolve(env.Undefined());
    return;
  }
  try {
    deferred_.Resolve(result_(env));
  } catch (const Napi::Error& error) {
    deferred_.Reject(error.Value());
  }
}

void AsyncTask::OnError(const Napi::Error& error) {
  deferred_.Reject(makeCodedError(Env(), errorCode_.empty() ? "internal" : errorCode_, error.Message()).Value());
}

}  // namespace ferrum
