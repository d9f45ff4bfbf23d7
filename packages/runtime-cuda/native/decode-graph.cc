// CUDA graphs for pure-decode steps (issue 7). A step whose rows are one token each, all sampled on the device,
// is packed at offsets that depend only on its bucket (the smallest captured batch size that holds it), its rows
// padded to the bucket. The bucket's graph, captured at load from a synthetic step of that size (GEMMs tuned
// first), replays every launch of the step; nothing in it depends on per-step host data: attention runs a fixed
// split count per bucket and sizes each row's splits on the device, and the sampling kernel finds the
// variable-length sections after the kv list (penalties, logit bias, allowed ids) through a header at a fixed
// offset (SamplingArgs::sections).
// Padded rows: token 0 at position 0, no KV write (slot -1), attending to one harmless kv entry, not sampled.
// captureGraph, here, also captures the graphs of repeated eager steps (StepGraphs).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cuda-check.h"
#include "kernels/kernels.h"
#include "model-runner.h"
#include "step-splits.h"

namespace ferrum {

int ModelRunner::graphBucket(int numSeqs) const {
  for (int bucket : buckets_) {
    if (bucket >= numSeqs) return bucket;
  }
  return 0;
}

int ModelRunner::graphSplits(int bucket) const {
  const ModelShape& s = config_.shape;
  // Sized for contexts long enough to want the most splits; short rows leave the extra splits empty.
  return chooseSplits(bucket, s.numHeads, s.numKvHeads, kMaxSplits * kAttentionTile * 64, numSms_, partialRowSplits())
      .numSplits;
}

bool ModelRunner::stageDecodeGraph(const StepView& v, StepLayout& L, int* w) {
  const int B = v.numSeqs;
  const int bucket = graphBucket(B);
  const size_t S = static_cast<size_t>(B);
  if (bucket == 0 || v.numTokens != B || !v.hasSampling || v.sampleRows.size != S) return false;
  for (int b = 0; b < B; b++) {
    if (v.sampleRows.data[b] != b || v.qIndptr.data[b + 1] != b + 1) return false;
    if (v.kvIndptr.data[b + 1] - v.kvIndptr.data[b] < 1) return false;
    if (v.rowInts.data[4 * b + 3] & kSampleSkip) return false;
  }
  const size_t K = static_cast<size_t>(v.kvIndptr.data[B]);
  const size_t A = static_cast<size_t>(v.adjOffsets.data[S]), N = static_cast<size_t>(v.allowedOffsets.data[S]);
  const size_t P = static_cast<size_t>(bucket);
  // tokenIds, positions, slotMapping, sampleRows, rowKvStart, rowKvLen, rowFloats, rowInts, the offsets, the header.
  const size_t rowInts = (6 + kRowFloats) * P, adjOffsets = rowInts + 4 * P, allowedOffsets = adjOffsets + P + 1;
  const size_t samplingSections = allowedOffsets + P + 1, kvStart = samplingSections + kSamplingSections;
  if (K + 1 > capacity_.kvIndices || kvStart + K + 1 + 4 * A + N > capacity_.words()) return false;

  L.numTokens = B;
  L.numSeqs = B;
  L.numSampled = B;
  L.sampling = true;
  L.graphBucket = bucket;
  L.numDecodeRows = B;
  L.numPrefillTiles = 0;
  L.hostLogitRows.clear();
  L.tokenIds = 0;
  L.positions = P;
  L.slotMapping = 2 * P;
  L.sampleRows = 3 * P;
  L.rowKvStart = 4 * P;
  L.rowKvLen = 5 * P;
  L.rowFloats = 6 * P;
  L.rowInts = rowInts;
  L.adjOffsets = adjOffsets;
  L.allowedOffsets = allowedOffsets;
  L.samplingSections = samplingSections;
  L.kvIndices = kvStart;

  std::memcpy(w + L.tokenIds, v.tokenIds.data, S * 4);
  std::memcpy(w + L.positions, v.positions.data, S * 4);
  std::memcpy(w + L.slotMapping, v.slotMapping.data, S * 4);
  std::memcpy(w + L.sampleRows, v.sampleRows.data, S * 4);
  std::memcpy(w + L.rowFloats, v.rowFloats.data, kRowFloats * S * 4);
  std::memcpy(w + L.rowInts, v.rowInts.data, 4 * S * 4);
  std::memcpy(w + L.kvIndices, v.kvIndices.data, K * 4);
  w[L.kvIndices + K] = 0;  // the padded rows' one kv entry: slot 0, read and ignored
  std::memcpy(w + L.adjOffsets, v.adjOffsets.data, (S + 1) * 4);
  std::memcpy(w + L.allowedOffsets, v.allowedOffsets.data, (S + 1) * 4);
  WordPacker packer{w, L.kvIndices + K + 1};
  putSamplingSections(v, L, packer);
  L.words = packer.at;
  L.maxKvLen = 0;
  for (int b = 0; b < B; b++) {
    const int kvLen = v.kvIndptr.data[b + 1] - v.kvIndptr.data[b];
    w[L.rowKvStart + b] = v.kvIndptr.data[b];
    w[L.rowKvLen + b] = kvLen;
    L.maxKvLen = std::max(L.maxKvLen, kvLen);
  }
  for (size_t r = S; r < P; r++) {
    w[L.tokenIds + r] = 0;
    w[L.positions + r] = 0;
    w[L.slotMapping + r] = -1;
    w[L.sampleRows + r] = static_cast<int>(r);
    w[L.rowKvStart + r] = static_cast<int>(K);
    w[L.rowKvLen + r] = 1;
    std::memset(w + L.rowFloats + kRowFloats * r, 0, kRowFloats * 4);
    w[L.rowInts + 4 * r] = 0;
    w[L.rowInts + 4 * r + 1] = 0;
    w[L.rowInts + 4 * r + 2] = 0;
    w[L.rowInts + 4 * r + 3] = kSampleSkip;
    w[L.adjOffsets + r + 1] = static_cast<int>(A);  // no entries
    w[L.allowedOffsets + r + 1] = static_cast<int>(N);
  }
  return true;
}

std::vector<ModelRunner::LayerProduct> ModelRunner::layerProducts() const {
  const ModelShape& s = config_.shape;
  const LayerOffsets& w = config_.layers[0];  // every layer has the same shapes
  return {{hidden_.as<bf16>(), weight(w.qkvW), qkv_.as(), s.qkvDim(), s.hiddenSize, false},
          {attnOut_.as<bf16>(), weight(w.oW), proj_.as(), s.hiddenSize, s.qDim(), false},
          {hidden_.as<bf16>(), weight(w.gateUpW), gateUp_.as(), 2 * s.intermediateSize, s.hiddenSize, true},
          {act_.as<bf16>(), weight(w.downW), proj_.as(), s.hiddenSize, s.intermediateSize, false}};
}

const bf16* ModelRunner::lmHead() const {
  return weight(config_.lmHeadOffset >= 0 ? config_.lmHeadOffset : config_.embedOffset);
}

void ModelRunner::tuneGemms(int rows) {
  tuneLayerGemms(rows);
  const ModelShape& s = config_.shape;
  gemm_->tune(sampledHidden_.as<bf16>(), lmHead(), logits_.as(), rows, s.vocabSize, s.hiddenSize, true, stream_);
}

void ModelRunner::tuneLayerGemms(int rows) {
  for (const LayerProduct& p : layerProducts()) {
    // The gate|up product runs with SwiGLU fused where it can (as runLayerTail decides), else as a plain GEMM.
    if (p.gated && gemm_->fusesSwiglu(p.x, p.w, act_.as<bf16>(), rows, p.n / 2, p.k)) {
      gemm_->tuneSwiglu(p.x, p.w, act_.as<bf16>(), rows, p.n / 2, p.k, stream_);
    } else {
      gemm_->tune(p.x, p.w, p.y, rows, p.n, p.k, false, stream_);
    }
  }
}

void ModelRunner::prepareGemms(int rows) {
  for (const LayerProduct& p : layerProducts()) gemm_->prepare(p.x, p.w, p.y, rows, p.n, p.k, false, stream_);
  const ModelShape& s = config_.shape;
  if (rows <= config_.maxSampleRows) {
    gemm_->prepare(sampledHidden_.as<bf16>(), lmHead(), logits_.as(), rows, s.vocabSize, s.hiddenSize, true, stream_);
  }
}

void ModelRunner::captureDecodeGraphs() {
  for (int bucket : buckets_) {
    const size_t B = static_cast<size_t>(bucket);
    // B greedy rows of token 0 at position 0, all writing and attending to slot 0 (the pool holds nothing yet).
    std::vector<int> zeros(B, 0), counting(B + 1), offsets(B + 1, 0), rowInts(4 * B, 0);
    std::vector<float> rowFloats(kRowFloats * B, 0.f);
    for (size_t i = 0; i <= B; i++) counting[i] = static_cast<int>(i);
    for (size_t r = 0; r < B; r++) {
      rowFloats[kRowFloats * r + 1] = 1.f;  // top-p
      rowFloats[kRowFloats * r + 3] = 1.f;  // repetition penalty
      rowInts[4 * r + 3] = kSampleGreedy;
    }
    StepView v;
    v.tokenIds = v.positions = v.kvIndices = v.slotMapping = {zeros.data(), B};
    v.qIndptr = v.kvIndptr = {counting.data(), B + 1};
    v.sampleRows = {counting.data(), B};
    v.numSeqs = v.numTokens = bucket;
    v.hasSampling = true;
    v.rowFloats = {rowFloats.data(), kRowFloats * B};
    v.rowInts = {rowInts.data(), 4 * B};
    v.adjOffsets = v.allowedOffsets = {offsets.data(), B + 1};
    execute(stage(v, false));
  }
  // The counters and the previous-token reference start with the first real step.
  graphSteps_ = 0;
  gpuStepNanos_ = 0;
  lastNumSampled_ = 0;
}

cudaGraphExec_t ModelRunner::decodeGraph(int bucket) {
  const auto found = graphs_.find(bucket);
  if (found != graphs_.end()) return found->second;
  // The staged step is replayed from its upload after capture, so the workspaces tuning writes hold nothing yet.
  tuneGemms(bucket);
  const int* upload = upload_.as<int>();
  cudaGraphExec_t exec = captureGraph("decode graph for batch " + std::to_string(bucket), [&] {
    AttentionPlan attention;
    attention.rows = bucket;
    attention.numSplits = graphSplits(bucket);
    attention.fuseRope = attentionFusesRope(config_.shape.numHeads, config_.shape.numKvHeads);  // rows: one token each
    runLayers(upload, bucket, attention);
    runHead(upload, bucket, false);
  });
  graphs_[bucket] = exec;  // nullptr: this bucket runs eagerly from now on
  return exec;
}

cudaGraphExec_t ModelRunner::captureGraph(const std::string& what, const std::function<void()>& launches) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FERRUM_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  cudaError_t status = cudaSuccess;
  try {
    launches();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime-cuda: %s not captured (%s); running it eagerly\n", what.c_str(), e.what());
    status = cudaErrorStreamCaptureInvalidated;
  }
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  if (status == cudaSuccess) status = ended;
  if (status == cudaSuccess) status = cudaGraphInstantiate(&exec, graph, 0);
  // Uploaded now (stream-ordered), not by its first launch, which would pay for it inside a step.
  if (status == cudaSuccess) status = cudaGraphUpload(exec, stream_);
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free capture error so the eager run starts clean
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    exec = nullptr;
  }
  return exec;
}

}  // namespace ferrum
