// Reading JS arguments at the native boundary. Every helper throws NativeError("invalid_argument") with
// the argument's name when the value has the wrong type or range, so nothing unchecked reaches the model.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "forward-batch.h"
#include "model.h"

namespace ferrum {

Int32Span int32Span(const Napi::Value& value, const char* name);

template <class T>
struct MutableSpan {
  T* data = nullptr;
  int64_t length = 0;
};
MutableSpan<int32_t> mutableInt32(const Napi::Value& value, const char* name);
MutableSpan<float> mutableFloat32(const Napi::Value& value, const char* name);

/** An integer in [min, max]. */
int64_t integerArg(const Napi::Value& value, const char* name, int64_t min, int64_t max);

/** The options object of loadModel (see src/native-addon.ts, NativeLoadOptions). */
ModelOptions parseModelOptions(const Napi::Object& options);

}  // namespace ferrum
