// The JS object wrapping a loaded Model (class NativeModel in src/native-addon.ts). Every method checks its
// arguments on the JS thread and returns a Promise settled after the work ran off the JS thread.
#pragma once

#include <napi.h>

#include <memory>

#include "model.h"

namespace ferrum {

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  /** Defines the class and keeps its constructor for wrap(). */
  static void define(Napi::Env env, Napi::Object exports);
  /** A new JS NativeModel owning (a share of) `model`. */
  static Napi::Object wrap(Napi::Env env, std::shared_ptr<Model> model);

  explicit NativeModel(const Napi::CallbackInfo& info);

 private:
  enum class Transfer { Copy, SwapOut, SwapIn };

  Napi::Value forward(const Napi::CallbackInfo& info);
  Napi::Value copySlots(const Napi::CallbackInfo& info) { return transfer(info, Transfer::Copy); }
  Napi::Value swapOut(const Napi::CallbackInfo& info) { return transfer(info, Transfer::SwapOut); }
  Napi::Value swapIn(const Napi::CallbackInfo& info) { return transfer(info, Transfer::SwapIn); }
  Napi::Value transfer(const Napi::CallbackInfo& info, Transfer kind);
  Napi::Value describe(const Napi::CallbackInfo& info);
  Napi::Value dispose(const Napi::CallbackInfo& info);

  // Shared with in-flight tasks, so dispose() while a step runs frees memory only after it finished.
  std::shared_ptr<Model> model_;
};

}  // namespace ferrum
