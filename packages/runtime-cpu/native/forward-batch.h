// A ForwardBatch as native code sees it: views of the caller's typed arrays (kept alive by the N-API
// layer until the step completes) and the output arrays the step fills.
#pragma once

#include <cstdint>
#include <string>

namespace ferrum {

struct Int32Span {
  const int32_t* data = nullptr;
  int64_t length = 0;
};

/** What to do with one sampled row (bit flags of rowModes[i]). */
enum RowMode : int32_t {
  kRowHostLogits = 1,  // copy its logits to outLogits (rows in order)
  kRowGreedy = 2,      // write argmax to outTokens and its log-probability to outLogprobs
};

struct BatchView {
  Int32Span tokenIds, positions, qIndptr, kvIndptr, kvIndices, slotMapping, sampleRows, rowModes;
  int numSeqs = 0;
  int numTokens = 0;
  int32_t* outTokens = nullptr;
  int64_t outTokensLength = 0;
  float* outLogprobs = nullptr;
  int64_t outLogprobsLength = 0;
  float* outLogits = nullptr;
  int64_t outLogitsLength = 0;

  int numSampleRows() const { return static_cast<int>(sampleRows.length); }
};

struct BatchLimits {
  int maxBatchTokens;
  int maxBatchSeqs;
  int numSlots;
  int vocabSize;
};

/** Empty when the batch is well formed and within limits, else a one-line reason. Never reads out of
 * bounds, whatever the input: every index is range-checked before it is used. */
std::string validateBatch(const BatchView& batch, const BatchLimits& limits);

}  // namespace ferrum
