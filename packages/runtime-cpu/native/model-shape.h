// The normalized model description native code needs (a subset of @ferrum/types' ModelConfig).
#pragma once

namespace ferrum {

struct RopeShape {
  bool llama3 = false;
  double theta = 10000.0;
  // llama3 scaling only.
  double factor = 1.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 1.0;
  double originalMaxPositionEmbeddings = 0.0;
  /** Round the inverse frequencies to bf16, as transformers does after `model.to(torch.bfloat16)` casts its
   * `inv_freq` buffer; only for matching references made that way. */
  bool bf16Frequencies = false;
};

struct ModelShape {
  int vocabSize = 0;
  int hiddenSize = 0;
  int intermediateSize = 0;
  int numLayers = 0;
  int numHeads = 0;
  int numKvHeads = 0;
  int headDim = 0;
  float rmsNormEps = 1e-6f;
  RopeShape rope;
  bool qkNorm = false;
  bool tieWordEmbeddings = false;

  int qDim() const { return numHeads * headDim; }
  int kvDim() const { return numKvHeads * headDim; }
};

}  // namespace ferrum
