// The JS object behind a loaded model (NativeExecutor in src/native-addon.ts). Every method returns a
// Promise; the work runs on the executor's worker thread, waits for the GPU on its completion thread (so the
// worker can enqueue a step staged behind one in flight) and settles through a thread-safe function.
#pragma once

#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "model-runner.h"
#include "task-queue.h"

namespace ferrum {

class NativeExecutor : public Napi::ObjectWrap<NativeExecutor> {
 public:
  /** Register the class; keeps its constructor in the env's instance data. */
  static void Init(Napi::Env env);
  /** Wrap a loaded runner (takes ownership). */
  static Napi::Object Create(Napi::Env env, std::unique_ptr<ModelRunner> runner);

  explicit NativeExecutor(const Napi::CallbackInfo& info);
  ~NativeExecutor() override;

 private:
  struct Completion;

  Napi::Value Forward(const Napi::CallbackInfo& info);
  Napi::Value CopySlots(const Napi::CallbackInfo& info);
  Napi::Value SwapOut(const Napi::CallbackInfo& info);
  Napi::Value SwapIn(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Info(const Napi::CallbackInfo& info);
  Napi::Value SpinUntilSettled(const Napi::CallbackInfo& info);

  Napi::Value transfer(const Napi::CallbackInfo& info, KvTransfer kind);
  Napi::Value forwardResult(Napi::Env env, int staged);
  /**
   * Queue `work` on the worker, then `wait` on the completion thread (either may be empty); the promise of
   * `deferred` settles, in submission order, with `value(env)` or the error either threw. `after` (optional) runs on
   * the worker once the wait has gone to the completion thread, outside the promise: its errors are logged.
   */
  void submit(Napi::Env env, Napi::Promise::Deferred deferred, std::function<void()> work, std::function<void()> wait,
              std::function<Napi::Value(Napi::Env)> value, bool isForward, std::function<void()> after = nullptr);
  void complete(Napi::Env env, Completion* completion);
  void shutDown();

  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<TaskQueue> queue_;   // the worker: launches steps, runs KV transfers
  std::unique_ptr<TaskQueue> waiter_;  // the completion thread: waits for launched steps, in order
  Napi::ThreadSafeFunction completions_;
  int pending_ = 0;
  std::atomic<int> settled_{0};  // completions handed to the thread-safe function and not yet delivered
  int forwardsInFlight_ = 0;
  bool disposed_ = false;
};

}  // namespace ferrum
