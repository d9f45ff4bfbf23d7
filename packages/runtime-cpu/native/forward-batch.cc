#include "forward-batch.h"

namespace ferrum {
namespace {

std::string at(const char* name, int64_t index) { return std::string(name) + "[" + std::to_string(index) + "]"; }

std::string checkIndptr(const Int32Span& indptr, const char* name, int numSeqs) {
  if (indptr.length < static_cast<int64_t>(numSeqs) + 1) {
    return std::string(name) + " has " + std::to_string(indptr.length) + " entries, needs numSeqs + 1 = " +
           std::to_string(numSeqs + 1);
  }
  if (indptr.data[0] != 0) return at(name, 0) + " must be 0";
  for (int b = 0; b < numSeqs; ++b) {
    if (indptr.data[b + 1] < indptr.data[b]) return std::string(name) + " must not decrease (at " + std::to_string(b + 1) + ")";
  }
  return "";
}

}  // namespace

std::string validateBatch(const BatchView& batch, const BatchLimits& limits) {
  const int64_t tokens = batch.numTokens;
  const int seqs = batch.numSeqs;
  if (tokens < 1 || tokens > limits.maxBatchTokens) {
    return "numTokens = " + std::to_string(tokens) + " is outside [1, maxBatchTokens = " +
           std::to_string(limits.maxBatchTokens) + "]";
  }
  if (seqs < 1 || seqs > limits.maxBatchSeqs) {
    return "numSeqs = " + std::to_string(seqs) + " is outside [1, maxBatchSeqs = " + std::to_string(limits.maxBatchSeqs) + "]";
  }
  const struct {
    const char* name;
    const Int32Span& span;
  } perToken[] = {{"tokenIds", batch.tokenIds}, {"positions", batch.positions}, {"slotMapping", batch.slotMapping}};
  for (const auto& field : perToken) {
    if (field.span.length < tokens) {
      return std::string(field.name) + " has " + std::to_string(field.span.length) + " entries, needs numTokens = " +
             std::to_string(tokens);
    }
  }
  for (int64_t t = 0; t < tokens; ++t) {
    if (batch.tokenIds.data[t] < 0 || batch.tokenIds.data[t] >= limits.vocabSize) {
      return at("tokenIds", t) + " = " + std::to_string(batch.tokenIds.data[t]) + " is outside the vocabulary [0, " +
             std::to_string(limits.vocabSize) + ")";
    }
  }
  std::string error = checkIndptr(batch.qIndptr, "qIndptr", seqs);
  if (error.empty()) error = checkIndptr(batch.kvIndptr, "kvIndptr", seqs);
  if (!error.empty()) return error;
  if (batch.qIndptr.data[seqs] != tokens) {
    return "qIndptr[numSeqs] = " + std::to_string(batch.qIndptr.data[seqs]) + " must equal numTokens = " + std::to_string(tokens);
  }
  if (batch.kvIndptr.data[seqs] > batch.kvIndices.length) {
    return "kvIndptr[numSeqs] = " + std::to_string(batch.kvIndptr.data[seqs]) + " exceeds kvIndices.length = " +
           std::to_string(batch.kvIndices.length);
  }
  for (int b = 0; b < seqs; ++b) {
    const int qBegin = batch.qIndptr.data[b], qLen = batch.qIndptr.data[b + 1] - qBegin;
    const int kvBegin = batch.kvIndptr.data[b], kvLen = batch.kvIndptr.data[b + 1] - kvBegin;
    const std::string seq = "sequence " + std::to_string(b);
    if (qLen < 1) return seq + " has no new tokens";
    if (kvLen < qLen) return seq + " attends to " + std::to_string(kvLen) + " slots, fewer than its " + std::to_string(qLen) + " new tokens";
    if (kvLen > limits.numSlots) return seq + " attends to more slots than the pool has";
    for (int j = 0; j < kvLen; ++j) {
      const int32_t slot = batch.kvIndices.data[kvBegin + j];
      if (slot < 0 || slot >= limits.numSlots) {
        return at("kvIndices", kvBegin + j) + " = " + std::to_string(slot) + " is outside the pool [0, " +
               std::to_string(limits.numSlots) + ")";
      }
    }
    // The new tokens are the last qLen entries of the sequence's KV list, at positions kvLen - qLen + i.
    for (int i = 0; i < qLen; ++i) {
      const int t = qBegin + i;
      if (batch.slotMapping.data[t] != batch.kvIndices.data[kvBegin + kvLen - qLen + i]) {
        return at("slotMapping", t) + " = " + std::to_string(batch.slotMapping.data[t]) +
               " differs from the slot kvIndices lists for that token (" +
               std::to_string(batch.kvIndices.data[kvBegin + kvLen - qLen + i]) + ")";
      }
      if (batch.positions.data[t] != kvLen - qLen + i) {
        return at("positions", t) + " = " + std::to_string(batch.positions.data[t]) + " but the token is entry " +
               std::to_string(kvLen - qLen + i) + " of " + seq + "'s KV list";
      }
    }
  }
  const int64_t samples = batch.sampleRows.length;
  if (samples > limits.maxBatchTokens) return "more sampleRows than maxBatchTokens";
  if (batch.rowModes.length != samples) return "rowModes must have one entry per sampled row";
  int64_t hostRows = 0;
  for (int64_t i = 0; i < samples; ++i) {
    if (batch.sampleRows.data[i] < 0 || batch.sampleRows.data[i] >= tokens) {
      return at("sampleRows", i) + " = " + std::to_string(batch.sampleRows.data[i]) + " is outside [0, numTokens)";
    }
    if (batch.rowModes.data[i] & kRowHostLogits) ++hostRows;
  }
  if (batch.outTokensLength < samples || batch.outLogprobsLength < samples) return "output arrays are too short";
  if (batch.outLogitsLength < hostRows * limits.vocabSize) return "the logits output array is too short";
  return "";
}

}  // namespace ferrum
