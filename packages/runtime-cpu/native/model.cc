#include "model.h"

#include <numeric>

#include "attention.h"
#include "cpu-features.h"
#include "native-error.h"

namespace ferrum {
namespace {

// What every k of the model (the projections' inputs: hidden, attention and MLP sizes) is a multiple of.
int kGranule(const ModelShape& s) { return std::gcd(std::gcd(s.hiddenSize, s.qDim()), s.intermediateSize); }

const KernelTable* chooseKernels(const ModelOptions& options) {
  const int granule = kGranule(options.shape);
  if (options.kernels.empty()) return defaultKernels(options.bf16Products, granule);
  const KernelTable* table = kernelsByName(options.kernels);
  if (table == nullptr) {
    std::string usable;
    for (const std::string& candidate : usableKernelNames()) usable += (usable.empty() ? "" : ", ") + candidate;
    throw NativeError("invalid_argument",
                      "SIMD path \"" + options.kernels + "\" is not usable here (usable: " + usable + ")");
  }
  if (granule % table->kMultiple != 0) {
    throw NativeError("invalid_argument", "SIMD path \"" + options.kernels +
                                              "\" needs hidden, attention and MLP sizes that are multiples of " +
                                              std::to_string(table->kMultiple));
  }
  return table;
}

void checkShape(const ModelShape& s) {
  if (s.vocabSize < 1 || s.hiddenSize < 1 || s.intermediateSize < 1 || s.numLayers < 1 || s.numHeads < 1 ||
      s.numKvHeads < 1 || s.headDim < 2 || s.headDim % 2 != 0 || s.numHeads % s.numKvHeads != 0) {
    throw NativeError("invalid_argument", "model shape is inconsistent (heads, KV heads or head size)");
  }
}

const ModelShape& checked(const ModelOptions& options) {
  checkShape(options.shape);
  if (options.numSlots < 1 || options.numHostSlots < 0 || options.maxBatchTokens < 1 || options.maxBatchSeqs < 1) {
    throw NativeError("invalid_argument", "numSlots, maxBatchTokens and maxBatchSeqs must be at least 1");
  }
  return options.shape;
}

AlignedBuffer floats(size_t rows, size_t width, const char* what) {
  return AlignedBuffer(rows * width * sizeof(float), what);
}

}  // namespace

Model::Model(const ModelOptions& options)
    : shape_(checked(options)),
      maxBatchTokens_(options.maxBatchTokens),
      maxBatchSeqs_(options.maxBatchSeqs),
      kernels_(chooseKernels(options)),
      pool_(options.numThreads > 0 ? options.numThreads : usableCpuCount()),
      weights_(options.shape, options.tensors, options.dummy, options.seed, pool_),
      kv_(options.shape.numLayers, options.numSlots, options.numHostSlots, options.shape.kvDim()),
      rope_(options.shape.rope, options.shape.headDim) {
  const size_t tokens = static_cast<size_t>(maxBatchTokens_);
  hidden_ = floats(tokens, static_cast<size_t>(shape_.hiddenSize), "activations");
  normed_ = floats(tokens, static_cast<size_t>(shape_.hiddenSize), "activations");
  q_ = floats(tokens, static_cast<size_t>(shape_.qDim()), "activations");
  k_ = floats(tokens, static_cast<size_t>(shape_.kvDim()), "activations");
  v_ = floats(tokens, static_cast<size_t>(shape_.kvDim()), "activations");
  attn_ = floats(tokens, static_cast<size_t>(shape_.qDim()), "activations");
  gate_ = floats(tokens, static_cast<size_t>(shape_.intermediateSize), "activations");
  up_ = floats(tokens, static_cast<size_t>(shape_.intermediateSize), "activations");
  ropeCos_ = floats(tokens, static_cast<size_t>(rope_.half()), "RoPE tables");
  ropeSin_ = floats(tokens, static_cast<size_t>(rope_.half()), "RoPE tables");
  tokenSeq_ = AlignedBuffer(tokens * sizeof(int32_t), "batch metadata");
  blockStarts_ = AlignedBuffer(tokens * sizeof(int32_t), "batch metadata");
  scoresPerThread_ = attentionScratchFloats(shape_.numHeads / shape_.numKvHeads, options.numSlots, shape_.headDim);
  scores_ = floats(static_cast<size_t>(pool_.size()), scoresPerThread_, "attention scores");
  logitRows_ = floats(kLogitRows, static_cast<size_t>(shape_.hiddenSize), "logits");
  logits_ = floats(kLogitRows, static_cast<size_t>(shape_.vocabSize), "logits");
  if (kernels_->bf16Products) {
    // Every projection input (the lm_head's kLogitRows included), packed for the widest of them.
    const int rows = maxBatchTokens_ > kLogitRows ? maxBatchTokens_ : kLogitRows;
    size_t elements = 0;
    for (int k : {shape_.hiddenSize, shape_.qDim(), shape_.intermediateSize}) {
      const size_t need = kernels_->packedElements(rows, k);
      if (need > elements) elements = need;
    }
    packed_ = AlignedBuffer(elements * sizeof(uint16_t), "activations");
  }
}

}  // namespace ferrum
