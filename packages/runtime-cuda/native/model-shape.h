// The model dimensions every kernel launcher and buffer size derives from (normalized ModelConfig).
#pragma once

#include <cstddef>

namespace ferrum {

struct ModelShape {
  int vocabSize = 0;
  int hiddenSize = 0;
  int intermediateSize = 0;
  int numLayers = 0;
  int numHeads = 0;
  int numKvHeads = 0;
  int headDim = 0;
  float rmsNormEps = 1e-6f;
  bool attentionBias = false;
  bool qkNorm = false;
  bool tieWordEmbeddings = false;

  int qDim() const { return numHeads * headDim; }
  int kvDim() const { return numKvHeads * headDim; }
  /** Width of the fused q|k|v projection output. */
  int qkvDim() const { return qDim() + 2 * kvDim(); }
  /** Bytes of one KV slot across all layers (K and V, bf16). */
  size_t slotBytes() const { return static_cast<size_t>(numLayers) * 2 * kvDim() * 2; }
};

}  // namespace ferrum
