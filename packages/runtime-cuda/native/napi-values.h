// Argument checking at the JS boundary: typed-array views, numbers, and errors carrying a FerrumErrorCode.
#pragma once

#include <napi.h>

#include <string>

#include "native-error.h"
#include "step-layout.h"

namespace ferrum {

/** A JS Error with `ferrumCode` set, which the TS wrapper turns into a FerrumError. */
inline Napi::Error makeError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Value().Set("ferrumCode", Napi::String::New(env, code));
  return error;
}

inline Napi::Value property(const Napi::Object& object, const char* key) {
  Napi::Value value = object.Get(key);
  if (value.IsUndefined()) throw NativeError("invalid_argument", std::string("missing field ") + key);
  return value;
}

inline double number(const Napi::Object& object, const char* key) {
  Napi::Value value = property(object, key);
  if (!value.IsNumber()) throw NativeError("invalid_argument", std::string(key) + " must be a number");
  return value.As<Napi::Number>().DoubleValue();
}

template <typename Array, typename T>
Span<T> typedSpan(const Napi::Object& object, const char* key, napi_typedarray_type type, const char* typeName) {
  Napi::Value value = property(object, key);
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != type) {
    throw NativeError("invalid_argument", std::string(key) + " must be a " + typeName);
  }
  Array array = value.As<Array>();
  return Span<T>{array.Data(), array.ElementLength()};
}

inline Span<int> ints(const Napi::Object& o, const char* key) {
  return typedSpan<Napi::Int32Array, int>(o, key, napi_int32_array, "Int32Array");
}
inline Span<float> floats(const Napi::Object& o, const char* key) {
  return typedSpan<Napi::Float32Array, float>(o, key, napi_float32_array, "Float32Array");
}
inline Span<double> doubles(const Napi::Object& o, const char* key) {
  return typedSpan<Napi::Float64Array, double>(o, key, napi_float64_array, "Float64Array");
}

}  // namespace ferrum
