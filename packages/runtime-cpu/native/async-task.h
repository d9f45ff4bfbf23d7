// Runs native work off the JS thread (libuv pool) and settles a Promise: resolve with a value built on the
// JS thread, or reject with an Error whose `code` is a FerrumErrorCode. Keeps the JS values the work
// reads or writes (typed arrays) alive until it settles.
#pragma once

#include <napi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ferrum {

/** An Error with `code` set; the TS loader maps it to FerrumError. */
Napi::Error makeCodedError(Napi::Env env, const std::string& code, const std::string& message);

/** A Promise already rejected with makeCodedError(code, message). */
Napi::Promise rejectedPromise(Napi::Env env, const std::string& code, const std::string& message);

class AsyncTask : public Napi::AsyncWorker {
 public:
  using Work = std::function<void()>;
  using Result = std::function<Napi::Value(Napi::Env)>;

  /** Queues `work`; `result` (may be empty: undefined) runs on the JS thread once it succeeded.
   * Exceptions from `work` reject: NativeError with its code, bad_alloc as out_of_memory, others internal. */
  static Napi::Promise start(Napi::Env env, Work work, Result result, const std::vector<Napi::Value>& keepAlive);

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& error) override;

 private:
  AsyncTask(Napi::Env env, Work work, Result result);

  Work work_;
  Result result_;
  Napi::Promise::Deferred deferred_;
  std::vector<Napi::Reference<Napi::Value>> keepAlive_;
  std::string errorCode_;
};

}  // namespace ferrum
