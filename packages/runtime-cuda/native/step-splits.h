// Split-K choice of the attention kernel, shared by eager steps and decode graphs.
#pragma once

#include <algorithm>
#include <cstddef>

#include "step-layout.h"

namespace ferrum {

constexpr int kAttentionTile = 128;  // kv entries one attention block consumes per iteration

struct SplitChoice {
  int numSplits = 1;
  int splitSize = 0;  // kv entries per split; 0: each row sizes its own splits on the device
};

/** Cut long kv ranges into splits when the rows alone would leave most SMs idle. */
inline SplitChoice chooseSplits(int numRows, int numHeads, int numKvHeads, int maxKvLen, int numSms,
                                size_t partialRowSplits) {
  const int group = numHeads / numKvHeads;
  const int blocks = numRows * numKvHeads * ((group + 7) / 8);
  int splits = 1;
  if (blocks < 2 * numSms && maxKvLen > 2 * kAttentionTile) {
    splits = std::min({kMaxSplits, (2 * numSms + blocks - 1) / blocks, (maxKvLen + kAttentionTile - 1) / kAttentionTile});
    while (splits > 1 && static_cast<size_t>(numRows) * splits > partialRowSplits) splits--;
  }
  SplitChoice c;
  const int perSplit = (maxKvLen + splits - 1) / splits;
  c.splitSize = (perSplit + kAttentionTile - 1) / kAttentionTile * kAttentionTile;
  c.numSplits = std::max(1, (maxKvLen + c.splitSize - 1) / c.splitSize);
  return c;
}

}  // namespace ferrum
