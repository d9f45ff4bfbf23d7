// The packed form of one ForwardBatch: every int/float section lives at a word offset of one upload buffer,
// so a step costs one pinned host-to-device copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/attention-prefill.h"
#include "kernels/kernels.h"

namespace ferrum {

/**
 * Most decode-attention splits of one row (split-K over long contexts; at most 32, one combine lane each);
 * sizes the partials workspace.
 */
constexpr int kMaxSplits = 32;

template <typename T>
struct Span {
  const T* data = nullptr;
  size_t size = 0;
};

/** Views of a forward call's JS typed arrays; valid during the call only. */
struct StepView {
  Span<int> tokenIds, positions, qIndptr, kvIndptr, kvIndices, slotMapping, sampleRows;
  int numSeqs = 0, numTokens = 0;
  bool hasSampling = false;
  Span<float> rowFloats, adjPre, adjPost;
  Span<int> rowInts, adjOffsets, adjIds, adjFlags, allowedOffsets, allowedIds;
  // ForwardBatch.previousTokens: row previousRows[i] takes the previous step's sample previousSampleIndices[i].
  Span<int> previousRows, previousSampleIndices;
};

/** Upper bounds of a step, fixed at load. */
struct StepCapacity {
  size_t tokens = 0, seqs = 0, sampleRows = 0, kvIndices = 0, adjustments = 0, allowed = 0;
  /** Prefill attention tiles of one step: each sequence's new rows cut into tiles of kPrefillTileRows. */
  size_t prefillTiles() const { return tokens / kPrefillTileRows + seqs; }
  size_t words() const {
    return 6 * tokens + kvIndices + sampleRows * (5 + kRowFloats) + 2 * (sampleRows + 1) + 4 * adjustments + allowed +
           4 * prefillTiles() + kSamplingSections;
  }
};

struct StepLayout {
  int numTokens = 0, numSeqs = 0, numSampled = 0;
  /** Rows attended by launchAttention (the rest by prefill tiles) and their longest kv list. */
  int numDecodeRows = 0, maxKvLen = 0;
  /** Prefill attention tiles (0: every row goes through launchAttention) and their longest kv list. */
  int numPrefillTiles = 0, maxPrefillKvLen = 0;
  bool sampling = false;
  /** A row sampled on the device asks for alternatives: their outputs are copied back too. */
  bool topLogprobs = false;
  /** > 0: a pure-decode step packed at the fixed offsets of this decode-graph bucket (rows padded to it). */
  int graphBucket = 0;
  size_t words = 0;
  // Word offsets into the upload buffer.
  size_t tokenIds = 0, positions = 0, slotMapping = 0, rowKvStart = 0, rowKvLen = 0, kvIndices = 0;
  size_t sampleRows = 0, rowFloats = 0, rowInts = 0, adjOffsets = 0, allowedOffsets = 0;
  /** The sampling kernel's header (SamplingArgs::sections): where the variable-length sampling sections start. */
  size_t samplingSections = 0;
  size_t decodeRows = 0, prefillTiles = 0;  // valid when numPrefillTiles > 0
  /** Sampled rows whose logits go to the host (all of them when not sampling); capacity reserved at load. */
  std::vector<int> hostLogitRows;
};

/** Appends sections to an upload buffer, each at the next free word, recording where each starts. */
struct WordPacker {
  int* words;
  size_t at = 0;
  /** `count` words from `src` at the next free word, whose offset goes to `offset`. */
  void put(size_t& offset, const void* src, size_t count) {
    offset = at;
    if (count > 0) std::memcpy(words + at, src, count * 4);
    at += count;
  }
};

/**
 * Appends a sampled step's variable-length sampling sections (adjustments, allowed ids) and writes their offsets
 * into the header at `layout.samplingSections`.
 */
void putSamplingSections(const StepView& view, const StepLayout& layout, WordPacker& packer);

}  // namespace ferrum
