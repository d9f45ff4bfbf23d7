// Rotary position embedding frequencies (default and llama3 scaling), computed the way transformers does
// in f32, and per-step cos/sin tables for the batch's positions.
#pragma once

#include <cstdint>
#include <vector>

#include "model-shape.h"

namespace ferrum {

class Rope {
 public:
  Rope(const RopeShape& rope, int headDim);

  int half() const { return static_cast<int>(inverseFrequencies_.size()); }

  /** cos/sin [count][half] of positions[0 .. count). */
  void fillTables(const int32_t* positions, int count, float* cos, float* sin) const;

 private:
  std::vector<float> inverseFrequencies_;
};

}  // namespace ferrum
