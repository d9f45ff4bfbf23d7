// What to put in the weight arena: byte ranges of checkpoint files (converted to bf16 on the way) or seeded
// fills for dummy weights. The TS side computes the arena layout; native code only executes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace ferrum {

struct TensorLoad {
  int fileIndex;
  uint64_t fileOffset;
  uint64_t byteLength;
  SourceDtype dtype;
  uint64_t dstOffset;  // bytes into the arena (bf16 destination)
};

struct TensorFill {
  uint64_t dstOffset;
  uint64_t count;   // bf16 elements
  float scale;      // > 0: uniform in [-scale, scale); 0: the constant `value`
  float value;
};

struct WeightPlan {
  uint64_t arenaBytes = 0;
  std::vector<std::string> files;
  std::vector<TensorLoad> loads;
  std::vector<TensorFill> fills;
  uint64_t seed = 0;
};

/**
 * Execute `plan` into `arena` (device memory of plan.arenaBytes): pread into two pinned staging buffers in
 * turn so that reading chunk i+1 overlaps the copy (and conversion) of chunk i. Returns when done.
 */
void loadWeights(const WeightPlan& plan, char* arena, cudaStream_t stream);

}  // namespace ferrum
