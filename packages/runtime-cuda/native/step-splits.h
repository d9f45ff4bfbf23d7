// Split-K choice of the decode attention kernel (kernels/attention.cu), shared by eager steps and decode graphs.
#pragma once

#include <algorithm>
#include <cstddef>

#include "step-layout.h"

namespace ferrum {

/**
 * Granule of a split, in kv entries: splits are whole multiples of it (eager steps and the per-row sizing of
 * decode graphs alike). The kernel walks a split in chunks of 16-64 entries (by head dim and group size) and
 * needs no alignment between the two; 32 keeps the smallest splits a single round trip of loads.
 */
constexpr int kAttentionTile = 32;

/**
 * Attention blocks per multiprocessor the splits aim for (the kernel fits four at once). Splits only happen
 * while rows × kv heads stays at most half of kAttentionBlocksPerSm × numSms and never take the block count
 * past it, so rows × splits never exceeds kAttentionBlocksPerSm × numSms.
 */
constexpr int kAttentionBlocksPerSm = 4;

struct SplitChoice {
  int numSplits = 1;
  int splitSize = 0;  // kv entries per split; 0: each row sizes its own splits on the device
};

/**
 * Cut the kv ranges into splits when the rows alone leave the GPU short of blocks: numSplits is at most
 * kMaxSplits and floor(kAttentionBlocksPerSm × numSms / blocks), splits hold at least kAttentionTile entries,
 * and rows × splits stays within `partialRowSplits` (the partials workspace).
 */
inline SplitChoice chooseSplits(int numRows, int numHeads, int numKvHeads, int maxKvLen, int numSms,
                                size_t partialRowSplits) {
  const int group = numHeads / numKvHeads;
  const long blocks = static_cast<long>(numRows) * numKvHeads * ((group + 7) / 8);
  const long target = static_cast<long>(kAttentionBlocksPerSm) * numSms;
  int splits = 1;
  if (blocks > 0 && 2 * blocks <= target && maxKvLen > kAttentionTile) {
    splits = static_cast<int>(std::min<long>({kMaxSplits, target / blocks, (maxKvLen + kAttentionTile - 1) / kAttentionTile}));
    while (splits > 1 && static_cast<size_t>(numRows) * splits > partialRowSplits) splits--;
  }
  SplitChoice c;
  const int perSplit = (std::max(maxKvLen, 1) + splits - 1) / splits;
  c.splitSize = (perSplit + kAttentionTile - 1) / kAttentionTile * kAttentionTile;
  c.numSplits = std::max(1, (maxKvLen + c.splitSize - 1) / c.splitSize);
  return c;
}

}  // namespace ferrum
