// The model's weights in one arena: matrices in their checkpoint dtype, norm and bias vectors widened to
// f32 at load. Filled either from safetensors files (one pread per tensor, straight into the arena) or with
// seeded random values (loadFormat "dummy").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aligned-buffer.h"
#include "dtype.h"
#include "model-shape.h"
#include "thread-pool.h"

namespace ferrum {

/** A view of one tensor inside the arena. Vectors have rows == 1. */
struct Tensor {
  DType dtype = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  bool present() const { return data != nullptr; }
  const float* f32() const { return static_cast<const float*>(data); }
};

struct LayerWeights {
  Tensor inputNorm, q, k, v, o, qBias, kBias, vBias, oBias, qNorm, kNorm, postNorm, gate, up, down;
};

/** One tensor as the loader describes it: Hugging Face name, dtype, shape and (unless dummy) where it lies. */
struct TensorSource {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  std::string file;
  uint64_t byteOffset = 0;
  uint64_t byteLength = 0;
};

class ModelWeights {
 public:
  /** Validates names and shapes against `shape`, allocates the arena and fills it (in parallel on `pool`).
   * Throws NativeError: invalid_checkpoint, missing_tensor, shape_mismatch, out_of_memory. */
  ModelWeights(const ModelShape& shape, const std::vector<TensorSource>& sources, bool dummy, uint64_t seed,
               ThreadPool& pool);

  Tensor embed;
  Tensor finalNorm;
  /** The embedding itself when the model ties them. */
  Tensor lmHead;
  std::vector<LayerWeights> layers;

  size_t bytes() const { return arena_.bytes(); }

 private:
  AlignedBuffer arena_;
};

}  // namespace ferrum
