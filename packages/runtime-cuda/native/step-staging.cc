// ModelRunner::stage: validate a ForwardBatch against the model and the pool, then pack it into the pinned
// upload buffer. Runs on the JS thread; nothing here touches the GPU.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/kernels.h"
#include "model-runner.h"

namespace ferrum {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw NativeError("invalid_argument", "forward: " + message); }

void needLength(const char* name, size_t have, size_t want) {
  if (have < want) invalid(std::string(name) + " has " + std::to_string(have) + " entries, needs " + std::to_string(want));
}

void checkRange(const char* name, const int* values, size_t count, int64_t limit) {
  for (size_t i = 0; i < count; i++) {
    if (values[i] < 0 || values[i] >= limit) {
      invalid(std::string(name) + "[" + std::to_string(i) + "] = " + std::to_string(values[i]) + " is outside [0, " +
              std::to_string(limit) + ")");
    }
  }
}

void checkOffsets(const char* name, const Span<int>& offsets, size_t rows, size_t capacity) {
  needLength(name, offsets.size, rows + 1);
  if (offsets.data[0] != 0) invalid(std::string(name) + "[0] must be 0");
  for (size_t i = 0; i < rows; i++) {
    if (offsets.data[i + 1] < offsets.data[i]) invalid(std::string(name) + " must be non-decreasing");
  }
  if (static_cast<size_t>(offsets.data[rows]) > capacity) {
    invalid(std::string(name) + " lists " + std::to_string(offsets.data[rows]) + " entries, capacity is " +
            std::to_string(capacity));
  }
}

}  // namespace

// Previous-token rows are packed as -1 - sample index in tokenIds: the embedding kernel reads those from
// the device's sampled-token buffer, which still holds the previous step's samples when this step starts.
void ModelRunner::stagePreviousTokens(const StepView& v, const StepLayout& L, int* words) const {
  const size_t count = v.previousRows.size;
  if (v.previousSampleIndices.size != count) invalid("previousTokens.rows and .sampleIndices differ in length");
  checkRange("previousTokens.rows", v.previousRows.data, count, v.numTokens);
  checkRange("previousTokens.sampleIndices", v.previousSampleIndices.data, count, lastNumSampled_);
  for (size_t i = 0; i < count; i++) {
    const int index = v.previousSampleIndices.data[i];
    if (!lastDeviceSampled_[index]) {
      invalid("previousTokens.sampleIndices[" + std::to_string(i) + "] = " + std::to_string(index) +
              " was not sampled on the device in the previous step");
    }
    words[L.tokenIds + v.previousRows.data[i]] = -1 - index;
  }
}

void putSamplingSections(const StepView& v, const StepLayout& L, WordPacker& packer) {
  const size_t S = v.sampleRows.size;
  const size_t A = static_cast<size_t>(v.adjOffsets.data[S]), N = static_cast<size_t>(v.allowedOffsets.data[S]);
  size_t offsets[kSamplingSections];  // in SamplingArgs' order
  packer.put(offsets[0], v.adjIds.data, A);
  packer.put(offsets[1], v.adjPre.data, A);
  packer.put(offsets[2], v.adjPost.data, A);
  packer.put(offsets[3], v.adjFlags.data, A);
  packer.put(offsets[4], v.allowedIds.data, N);
  for (int i = 0; i < kSamplingSections; i++) packer.words[L.samplingSections + i] = static_cast<int>(offsets[i]);
}

int ModelRunner::stage(const StepView& v, bool afterInFlight) {
  const size_t T = static_cast<size_t>(v.numTokens), B = static_cast<size_t>(v.numSeqs), S = v.sampleRows.size;
  if (v.numTokens < 0 || T > capacity_.tokens) invalid("numTokens " + std::to_string(v.numTokens) + " exceeds maxBatchTokens");
  if (v.numSeqs < 0 || B > capacity_.seqs) invalid("numSeqs " + std::to_string(v.numSeqs) + " exceeds maxBatchSeqs");
  if (S > capacity_.sampleRows) invalid(std::to_string(S) + " sampled rows exceed " + std::to_string(capacity_.sampleRows));
  needLength("tokenIds", v.tokenIds.size, T);
  needLength("positions", v.positions.size, T);
  needLength("slotMapping", v.slotMapping.size, T);
  checkOffsets("qIndptr", v.qIndptr, B, T);
  if (static_cast<size_t>(v.qIndptr.data[B]) != T) invalid("qIndptr[numSeqs] must equal numTokens");
  checkOffsets("kvIndptr", v.kvIndptr, B, capacity_.kvIndices);
  const size_t K = static_cast<size_t>(v.kvIndptr.data[B]);
  needLength("kvIndices", v.kvIndices.size, K);
  checkRange("tokenIds", v.tokenIds.data, T, config_.shape.vocabSize);
  checkRange("slotMapping", v.slotMapping.data, T, static_cast<int64_t>(numSlots_));
  checkRange("kvIndices", v.kvIndices.data, K, static_cast<int64_t>(numSlots_));
  checkRange("sampleRows", v.sampleRows.data, S, static_cast<int64_t>(T));
  for (size_t i = 0; i < T; i++) {
    if (v.positions.data[i] < 0) invalid("positions must be non-negative");
  }
  if (v.hasSampling) {
    needLength("sampling.rowFloats", v.rowFloats.size, kRowFloats * S);
    needLength("sampling.rowInts", v.rowInts.size, 4 * S);
    checkOffsets("sampling.adjOffsets", v.adjOffsets, S, capacity_.adjustments);
    checkOffsets("sampling.allowedOffsets", v.allowedOffsets, S, capacity_.allowed);
    const size_t A = static_cast<size_t>(v.adjOffsets.data[S]), N = static_cast<size_t>(v.allowedOffsets.data[S]);
    needLength("sampling.adjIds", v.adjIds.size, A);
    needLength("sampling.adjPre", v.adjPre.size, A);
    needLength("sampling.adjPost", v.adjPost.size, A);
    needLength("sampling.adjFlags", v.adjFlags.size, A);
    needLength("sampling.allowedIds", v.allowedIds.size, N);
    checkRange("sampling.adjIds", v.adjIds.data, A, config_.shape.vocabSize);
    checkRange("sampling.allowedIds", v.allowedIds.data, N, config_.shape.vocabSize);
  }

  // The area not in flight (at most one is); nothing is committed until every check has passed.
  const int turn = nextStaged_;
  StepLayout& L = staged_[turn].layout;
  int* words = staged_[turn].upload.as<int>();
  if (!stageDecodeGraph(v, L, words)) stagePacked(v, L, words);
  if (afterInFlight && !L.hostLogitRows.empty()) {
    invalid("a step with host logits cannot be staged while another step is in flight");
  }
  stagePreviousTokens(v, L, words);
  L.topLogprobs = false;
  for (size_t r = 0; r < S && L.sampling; r++) {
    const int flags = v.rowInts.data[4 * r + 3];
    if (!(flags & kSampleSkip) && (flags >> kSampleTopShift) > 0) L.topLogprobs = true;
  }
  // Committed: the next step's previous tokens refer to this one's device samples.
  nextStaged_ = 1 - turn;
  lastNumSampled_ = L.sampling ? static_cast<int>(S) : 0;
  std::fill(lastDeviceSampled_.begin(), lastDeviceSampled_.begin() + lastNumSampled_, 1);
  for (int r : L.hostLogitRows) lastDeviceSampled_[r] = 0;
  return turn;
}

void ModelRunner::stagePacked(const StepView& v, StepLayout& L, int* words) {
  const size_t T = static_cast<size_t>(v.numTokens), B = static_cast<size_t>(v.numSeqs), S = v.sampleRows.size;
  const size_t K = static_cast<size_t>(v.kvIndptr.data[B]);
  L.graphBucket = 0;
  L.numTokens = v.numTokens;
  L.numSeqs = v.numSeqs;
  L.numSampled = static_cast<int>(S);
  L.sampling = v.hasSampling;
  WordPacker packer{words};
  packer.put(L.tokenIds, v.tokenIds.data, T);
  packer.put(L.positions, v.positions.data, T);
  packer.put(L.slotMapping, v.slotMapping.data, T);
  packer.put(L.kvIndices, v.kvIndices.data, K);
  packer.put(L.sampleRows, v.sampleRows.data, S);
  const size_t at = packer.at;
  // Per row: where its sequence's kv list starts and how much of it the row sees (causal). Sequences with
  // several new tokens go to the tensor-core prefill kernel in tiles; single-token rows to launchAttention.
  L.rowKvStart = at;
  L.rowKvLen = at + T;
  L.decodeRows = at + 2 * T;
  L.prefillTiles = at + 3 * T;
  const bool tiled = prefillAttentionSupportsHeadDim(config_.shape.headDim);
  L.numDecodeRows = 0;
  L.numPrefillTiles = 0;
  L.maxPrefillKvLen = 0;
  L.maxKvLen = 0;
  int allRowsMaxKv = 0;
  for (size_t b = 0; b < B; b++) {
    const int q0 = v.qIndptr.data[b], q1 = v.qIndptr.data[b + 1];
    const int kv0 = v.kvIndptr.data[b], kvLen = v.kvIndptr.data[b + 1] - kv0;
    if (kvLen < q1 - q0) invalid("sequence " + std::to_string(b) + " has fewer kv entries than new tokens");
    for (int row = q0; row < q1; row++) {
      words[L.rowKvStart + row] = kv0;
      words[L.rowKvLen + row] = kvLen - (q1 - row) + 1;
    }
    allRowsMaxKv = std::max(allRowsMaxKv, kvLen);
    if (tiled && q1 - q0 > 1) {
      L.maxPrefillKvLen = std::max(L.maxPrefillKvLen, kvLen);
      for (int first = q0; first < q1; first += kPrefillTileRows) {
        int* tile = words + L.prefillTiles + 4 * L.numPrefillTiles++;
        tile[0] = first;
        tile[1] = std::min(kPrefillTileRows, q1 - first);
        tile[2] = kv0;
        tile[3] = kvLen - (q1 - first) + 1;
      }
    } else {
      for (int row = q0; row < q1; row++) words[L.decodeRows + L.numDecodeRows++] = row;
      L.maxKvLen = std::max(L.maxKvLen, kvLen);
    }
  }
  if (L.numPrefillTiles == 0) L.maxKvLen = allRowsMaxKv;  // every row goes through launchAttention
  packer.at = L.prefillTiles + 4 * L.numPrefillTiles;

  L.hostLogitRows.clear();
  if (!v.hasSampling) {
    for (size_t r = 0; r < S; r++) L.hostLogitRows.push_back(static_cast<int>(r));
    // Unused, but part of the layout that StepGraphs compares: nothing left from the area's previous step.
    L.rowFloats = L.rowInts = L.adjOffsets = L.allowedOffsets = L.samplingSections = 0;
  } else {
    for (size_t r = 0; r < S; r++) {
      if (v.rowInts.data[4 * r + 3] & kSampleSkip) L.hostLogitRows.push_back(static_cast<int>(r));
    }
    packer.put(L.rowFloats, v.rowFloats.data, kRowFloats * S);
    packer.put(L.rowInts, v.rowInts.data, 4 * S);
    packer.put(L.adjOffsets, v.adjOffsets.data, S + 1);
    packer.put(L.allowedOffsets, v.allowedOffsets.data, S + 1);
    L.samplingSections = packer.at;
    packer.at += kSamplingSections;
    putSamplingSections(v, L, packer);
  }
  L.words = packer.at;
}

}  // namespace ferrum
