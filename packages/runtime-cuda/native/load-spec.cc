#include "load-spec.h"

#include <string>

#include "napi-values.h"

namespace ferrum {
namespace {

ModelShape parseShape(const Napi::Object& o) {
  ModelShape s;
  s.vocabSize = static_cast<int>(number(o, "vocabSize"));
  s.hiddenSize = static_cast<int>(number(o, "hiddenSize"));
  s.intermediateSize = static_cast<int>(number(o, "intermediateSize"));
  s.numLayers = static_cast<int>(number(o, "numLayers"));
  s.numHeads = static_cast<int>(number(o, "numHeads"));
  s.numKvHeads = static_cast<int>(number(o, "numKvHeads"));
  s.headDim = static_cast<int>(number(o, "headDim"));
  s.rmsNormEps = static_cast<float>(number(o, "rmsNormEps"));
  s.attentionBias = property(o, "attentionBias").ToBoolean();
  s.qkNorm = property(o, "qkNorm").ToBoolean();
  s.tieWordEmbeddings = property(o, "tieWordEmbeddings").ToBoolean();
  if (s.vocabSize <= 0 || s.hiddenSize <= 0 || s.numLayers <= 0 || s.numHeads <= 0 || s.numKvHeads <= 0 ||
      s.numHeads % s.numKvHeads != 0) {
    throw NativeError("invalid_argument", "model shape is inconsistent");
  }
  return s;
}

void parseWeights(const Napi::Object& o, WeightPlan& plan) {
  plan.arenaBytes = static_cast<uint64_t>(number(o, "arenaBytes"));
  plan.seed = static_cast<uint64_t>(number(o, "seed"));
  Napi::Value files = property(o, "files");
  if (!files.IsArray()) throw NativeError("invalid_argument", "files must be an array of paths");
  Napi::Array fileArray = files.As<Napi::Array>();
  for (uint32_t i = 0; i < fileArray.Length(); i++) plan.files.push_back(fileArray.Get(i).ToString().Utf8Value());
  const Span<double> loads = doubles(o, "loads");
  for (size_t i = 0; i + 5 <= loads.size; i += 5) {
    TensorLoad load{static_cast<int>(loads.data[i]), static_cast<uint64_t>(loads.data[i + 1]),
                    static_cast<uint64_t>(loads.data[i + 2]), static_cast<SourceDtype>(static_cast<int>(loads.data[i + 3])),
                    static_cast<uint64_t>(loads.data[i + 4])};
    if (load.fileIndex < 0 || static_cast<size_t>(load.fileIndex) >= plan.files.size() ||
        load.dstOffset + load.byteLength / (load.dtype == SourceDtype::kF32 ? 2 : 1) > plan.arenaBytes) {
      throw NativeError("invalid_argument", "weight load " + std::to_string(i / 5) + " is out of range");
    }
    plan.loads.push_back(load);
  }
  const Span<double> fills = doubles(o, "fills");
  for (size_t i = 0; i + 4 <= fills.size; i += 4) {
    TensorFill fill{static_cast<uint64_t>(fills.data[i]), static_cast<uint64_t>(fills.data[i + 1]),
                    static_cast<float>(fills.data[i + 2]), static_cast<float>(fills.data[i + 3])};
    if (fill.dstOffset + 2 * fill.count > plan.arenaBytes) throw NativeError("invalid_argument", "weight fill out of range");
    plan.fills.push_back(fill);
  }
}

}  // namespace

RunnerConfig parseLoadSpec(const Napi::Object& spec) {
  RunnerConfig c;
  c.shape = parseShape(property(spec, "shape").As<Napi::Object>());
  c.maxPositionEmbeddings = static_cast<int>(number(spec, "maxPositionEmbeddings"));
  const Span<float> invFreq = floats(spec, "invFreq");
  if (invFreq.size != static_cast<size_t>(c.shape.headDim / 2)) throw NativeError("invalid_argument", "invFreq must have headDim / 2 entries");
  c.invFreq.assign(invFreq.data, invFreq.data + invFreq.size);
  parseWeights(spec, c.weights);
  c.embedOffset = static_cast<int64_t>(number(spec, "embedOffset"));
  c.finalNormOffset = static_cast<int64_t>(number(spec, "finalNormOffset"));
  c.lmHeadOffset = static_cast<int64_t>(number(spec, "lmHeadOffset"));
  const Span<double> layers = doubles(spec, "layerOffsets");
  if (layers.size != static_cast<size_t>(c.shape.numLayers) * kLayerOffsetFields) {
    throw NativeError("invalid_argument", "layerOffsets must have numLayers × 10 entries");
  }
  for (int l = 0; l < c.shape.numLayers; l++) {
    const double* f = layers.data + l * kLayerOffsetFields;
    c.layers.push_back(LayerOffsets{static_cast<int64_t>(f[0]), static_cast<int64_t>(f[1]), static_cast<int64_t>(f[2]),
                                    static_cast<int64_t>(f[3]), static_cast<int64_t>(f[4]), static_cast<int64_t>(f[5]),
                                    static_cast<int64_t>(f[6]), static_cast<int64_t>(f[7]), static_cast<int64_t>(f[8]),
                                    static_cast<int64_t>(f[9])});
  }
  c.maxBatchTokens = static_cast<int>(number(spec, "maxBatchTokens"));
  c.maxBatchSeqs = static_cast<int>(number(spec, "maxBatchSeqs"));
  c.maxSampleRows = static_cast<int>(number(spec, "maxSampleRows"));
  c.maxKvTokens = static_cast<uint64_t>(number(spec, "maxKvTokens"));
  c.gpuMemoryUtilization = number(spec, "gpuMemoryUtilization");
  c.hostKvBytes = static_cast<uint64_t>(number(spec, "hostKvBytes"));
  c.device = static_cast<int>(number(spec, "device"));
  c.enforceEager = spec.Has("enforceEager") && spec.Get("enforceEager").ToBoolean().Value();
  c.spinWait = !spec.Has("spinWait") || spec.Get("spinWait").ToBoolean().Value();
  if (c.maxBatchTokens <= 0 || c.maxBatchSeqs <= 0 || c.maxSampleRows <= 0) {
    throw NativeError("invalid_argument", "maxBatchTokens, maxBatchSeqs and maxSampleRows must be positive");
  }
  return c;
}

}  // namespace ferrum
