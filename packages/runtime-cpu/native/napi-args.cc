#include "napi-args.h"

#include <cmath>

#include "native-error.h"

namespace ferrum {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw NativeError("invalid_argument", message); }

Napi::TypedArray typedArray(const Napi::Value& value, napi_typedarray_type type, const char* name, const char* typeName) {
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != type) {
    invalid(std::string(name) + " must be an " + typeName);
  }
  return value.As<Napi::TypedArray>();
}

Napi::Value field(const Napi::Object& object, const char* key) { return object.Get(key); }

double numberField(const Napi::Object& object, const char* key) {
  Napi::Value value = field(object, key);
  if (!value.IsNumber() || !std::isfinite(value.As<Napi::Number>().DoubleValue())) {
    invalid(std::string(key) + " must be a finite number");
  }
  return value.As<Napi::Number>().DoubleValue();
}

int intField(const Napi::Object& object, const char* key, int64_t min, int64_t max) {
  return static_cast<int>(integerArg(field(object, key), key, min, max));
}

bool boolField(const Napi::Object& object, const char* key) {
  Napi::Value value = field(object, key);
  if (!value.IsBoolean()) invalid(std::string(key) + " must be a boolean");
  return value.As<Napi::Boolean>().Value();
}

std::string stringField(const Napi::Object& object, const char* key) {
  Napi::Value value = field(object, key);
  if (!value.IsString()) invalid(std::string(key) + " must be a string");
  return value.As<Napi::String>().Utf8Value();
}

Napi::Object objectField(const Napi::Object& object, const char* key) {
  Napi::Value value = field(object, key);
  if (!value.IsObject()) invalid(std::string(key) + " must be an object");
  return value.As<Napi::Object>();
}

DType parseDtype(const std::string& name) {
  if (name == "bf16") return DType::BF16;
  if (name == "f16") return DType::F16;
  if (name == "f32") return DType::F32;
  throw NativeError("unsupported_dtype", "dtype " + name + " is not supported (bf16, f16, f32)");
}

ModelShape parseShape(const Napi::Object& config) {
  constexpr int64_t kMax = int64_t{1} << 30;
  ModelShape s;
  s.vocabSize = intField(config, "vocabSize", 1, kMax);
  s.hiddenSize = intField(config, "hiddenSize", 1, kMax);
  s.intermediateSize = intField(config, "intermediateSize", 1, kMax);
  s.numLayers = intField(config, "numLayers", 1, 100000);
  s.numHeads = intField(config, "numHeads", 1, 100000);
  s.numKvHeads = intField(config, "numKvHeads", 1, 100000);
  s.headDim = intField(config, "headDim", 2, 100000);
  s.rmsNormEps = static_cast<float>(numberField(config, "rmsNormEps"));
  s.qkNorm = boolField(config, "qkNorm");
  s.tieWordEmbeddings = boolField(config, "tieWordEmbeddings");
  const Napi::Object rope = objectField(config, "rope");
  const std::string type = stringField(rope, "type");
  s.rope.theta = numberField(rope, "theta");
  if (type == "llama3") {
    s.rope.llama3 = true;
    s.rope.factor = numberField(rope, "factor");
    s.rope.lowFreqFactor = numberField(rope, "lowFreqFactor");
    s.rope.highFreqFactor = numberField(rope, "highFreqFactor");
    s.rope.originalMaxPositionEmbeddings = numberField(rope, "originalMaxPositionEmbeddings");
    if (s.rope.highFreqFactor == s.rope.lowFreqFactor) invalid("llama3 RoPE needs highFreqFactor != lowFreqFactor");
  } else if (type != "default") {
    throw NativeError("unsupported_architecture", "RoPE type " + type + " is not supported");
  }
  return s;
}

TensorSource parseTensor(const Napi::Object& tensor, bool dummy) {
  TensorSource source;
  source.name = stringField(tensor, "name");
  source.dtype = parseDtype(stringField(tensor, "dtype"));
  Napi::Value shape = field(tensor, "shape");
  if (!shape.IsArray()) invalid("shape of " + source.name + " must be an array");
  Napi::Array dims = shape.As<Napi::Array>();
  for (uint32_t i = 0; i < dims.Length(); ++i) source.shape.push_back(integerArg(dims.Get(i), "shape", 1, int64_t{1} << 40));
  if (!dummy) {
    source.file = stringField(tensor, "file");
    source.byteOffset = static_cast<uint64_t>(integerArg(field(tensor, "byteOffset"), "byteOffset", 0, int64_t{1} << 52));
    source.byteLength = static_cast<uint64_t>(integerArg(field(tensor, "byteLength"), "byteLength", 0, int64_t{1} << 52));
  }
  return source;
}

}  // namespace

Int32Span int32Span(const Napi::Value& value, const char* name) {
  Napi::TypedArray array = typedArray(value, napi_int32_array, name, "Int32Array");
  return Int32Span{static_cast<const int32_t*>(array.As<Napi::Int32Array>().Data()), static_cast<int64_t>(array.ElementLength())};
}

MutableSpan<int32_t> mutableInt32(const Napi::Value& value, const char* name) {
  Napi::TypedArray array = typedArray(value, napi_int32_array, name, "Int32Array");
  return {array.As<Napi::Int32Array>().Data(), static_cast<int64_t>(array.ElementLength())};
}

MutableSpan<float> mutableFloat32(const Napi::Value& value, const char* name) {
  Napi::TypedArray array = typedArray(value, napi_float32_array, name, "Float32Array");
  return {array.As<Napi::Float32Array>().Data(), static_cast<int64_t>(array.ElementLength())};
}

int64_t integerArg(const Napi::Value& value, const char* name, int64_t min, int64_t max) {
  if (!value.IsNumber()) invalid(std::string(name) + " must be a number");
  const double number = value.As<Napi::Number>().DoubleValue();
  if (!(number >= static_cast<double>(min) && number <= static_cast<double>(max)) || std::floor(number) != number) {
    invalid(std::string(name) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(number);
}

ModelOptions parseModelOptions(const Napi::Object& options) {
  ModelOptions out;
  out.shape = parseShape(objectField(options, "config"));
  out.dummy = boolField(options, "dummy");
  out.seed = static_cast<uint64_t>(integerArg(field(options, "seed"), "seed", 0, (int64_t{1} << 53) - 1));
  out.numSlots = intField(options, "numSlots", 1, INT32_MAX);
  out.numHostSlots = intField(options, "numHostSlots", 0, INT32_MAX);
  out.maxBatchTokens = intField(options, "maxBatchTokens", 1, 1 << 24);
  out.maxBatchSeqs = intField(options, "maxBatchSeqs", 1, 1 << 24);
  out.numThreads = intField(options, "numThreads", 0, 4096);
  out.kernels = stringField(options, "simd");
  out.bf16Products = boolField(options, "bf16Products");
  out.shape.rope.bf16Frequencies = boolField(options, "ropeBf16Frequencies");
  Napi::Value tensors = field(options, "tensors");
  if (!tensors.IsArray()) invalid("tensors must be an array");
  Napi::Array list = tensors.As<Napi::Array>();
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value tensor = list.Get(i);
    if (!tensor.IsObject()) invalid("tensors must hold objects");
    out.tensors.push_back(parseTensor(tensor.As<Napi::Object>(), out.dummy));
  }
  return out;
}

}  // namespace ferrum
