// ModelRunner::launch: one forward step on the stream (a decode-graph replay or eager launches) and its output
// copies; ModelRunner::finish: the wait for it. Per layer:
//   [add+]RMSNorm → QKV GEMM → bias/qk-norm/RoPE/KV write (inside attention in decode graphs) → attention →
//   o_proj GEMM → add+RMSNorm → gate|up GEMM → SwiGLU (one fused GEMV at 1–8 rows) → down GEMM; then the final
//   norm for the sampled rows only, lm_head (f32 logits), host logits for the rows that asked, and device sampling.
// An eager step that samples fewer rows than it runs takes the last layer past its KV write for the sampled rows
// only (AttentionPlan::sampledRowsOnlyInLastLayer); an eager step whose layout ran before replays its graph
// (StepGraphs).
#include <algorithm>
#include <cmath>

#include "cuda-check.h"
#include "model-runner.h"
#include "step-splits.h"

namespace ferrum {
size_t ModelRunner::partialRowSplits() const {
  const ModelShape& s = config_.shape;
  return partial_.bytes() / (sizeof(float) * s.numHeads * (s.headDim + 2));
}

void ModelRunner::launch(int staged) {
  FERRUM_CUDA(cudaSetDevice(config_.device));
  StagedStep& step = staged_[staged];
  const StepLayout& L = step.layout;
  layout_ = &L;
  FERRUM_CUDA(cudaEventRecord(step.start, stream_));
  FERRUM_CUDA(cudaMemcpyAsync(upload_.as(), step.upload.as(), L.words * 4, cudaMemcpyHostToDevice, stream_));
  const int* upload = upload_.as<int>();
  cudaGraphExec_t graph = L.graphBucket > 0 ? decodeGraph(L.graphBucket) : nullptr;
  const bool stepGraph = stepGraphsOn_ && L.graphBucket == 0;
  const StepGraphs::Graph* replay = stepGraph ? stepGraphs_.find(L) : nullptr;
  if (graph != nullptr) {
    FERRUM_CUDA(cudaGraphLaunch(graph, stream_));
    graphSteps_.fetch_add(1, std::memory_order_relaxed);
  } else if (replay != nullptr && replay->exec != nullptr) {
    FERRUM_CUDA(cudaGraphLaunch(replay->exec, stream_));
    stepGraphSteps_.fetch_add(1, std::memory_order_relaxed);
    clusterMergedLaunches_.fetch_add(replay->clusterMerged, std::memory_order_relaxed);
  } else {
    runEager(upload);
  }
  if (L.sampling && L.numSampled > 0) {
    FERRUM_CUDA(cudaMemcpyAsync(step.output.as(), output_.as(), topIdsWord() * sizeof(int), cudaMemcpyDeviceToHost,
                                stream_));
  }
  if (L.topLogprobs) {
    const size_t bytes = static_cast<size_t>(L.numSampled) * kMaxTopLogprobs * sizeof(int);
    for (const size_t word : {topIdsWord(), topLogprobsWord()}) {
      FERRUM_CUDA(cudaMemcpyAsync(step.output.as<int>() + word, output_.as<int>() + word, bytes,
                                  cudaMemcpyDeviceToHost, stream_));
    }
  }
  FERRUM_CUDA(cudaEventRecord(step.end, stream_));
  FERRUM_CUDA(cudaEventRecord(step.done, stream_));
  if (stepGraph && replay == nullptr && stepGraphs_.ranBefore(L)) {
    captureLayout_ = L;  // no allocation unless the step has host-logit rows
    capturePending_ = true;
  }
}

void ModelRunner::runEager(const int* upload) {
  const StepLayout& L = *layout_;
  const ModelShape& s = config_.shape;
  const SplitChoice splits =
      chooseSplits(L.numDecodeRows, s.numHeads, s.numKvHeads, L.maxKvLen, numSms_, partialRowSplits());
  AttentionPlan attention;
  attention.rows = L.numDecodeRows;
  attention.rowList = L.numPrefillTiles > 0 ? upload + L.decodeRows : nullptr;
  attention.numSplits = splits.numSplits;
  attention.splitSize = splits.splitSize;
  attention.numTiles = L.numPrefillTiles;
  attention.tileSplits = choosePrefillSplits(L.numPrefillTiles, s.numHeads, L.maxPrefillKvLen, L.numTokens, numSms_,
                                             partialRowSplits());
  attention.tiles = upload + L.prefillTiles;
  attention.sampledRowsOnlyInLastLayer = L.numSampled < L.numTokens;
  if (L.numTokens > 0) runLayers(upload, L.numTokens, attention);
  if (L.numSampled > 0) runHead(upload, L.numSampled, attention.sampledRowsOnlyInLastLayer);
}

void ModelRunner::captureRepeatedStep() {
  if (!capturePending_) return;
  capturePending_ = false;
  FERRUM_CUDA(cudaSetDevice(config_.device));
  layout_ = &captureLayout_;
  // The capture counts the cluster-merged launches it records, though none runs: they count when the graph replays.
  const uint64_t before = clusterMergedLaunches_.load(std::memory_order_relaxed);
  cudaGraphExec_t exec = captureGraph("graph of a repeated step", [this] { runEager(upload_.as<int>()); });
  const uint64_t merged = clusterMergedLaunches_.load(std::memory_order_relaxed) - before;
  clusterMergedLaunches_.fetch_sub(merged, std::memory_order_relaxed);
  stepGraphs_.insert(captureLayout_, exec, merged);
  if (exec != nullptr) stepGraphsCaptured_.fetch_add(1, std::memory_order_relaxed);
}

void ModelRunner::finish(int staged) {
  FERRUM_CUDA(cudaSetDevice(config_.device));
  const StagedStep& step = staged_[staged];
  FERRUM_CUDA(cudaEventSynchronize(step.done));
  float ms = 0.f;
  FERRUM_CUDA(cudaEventElapsedTime(&ms, step.start, step.end));
  gpuStepNanos_.fetch_add(static_cast<uint64_t>(static_cast<double>(ms) * 1e6), std::memory_order_relaxed);
}

void ModelRunner::runLayers(const int* upload, int numTokens, const AttentionPlan& plan) {
  const ModelShape& s = config_.shape;
  const StepLayout& L = *layout_;
  const int T = numTokens;
  bf16* residual = residual_.as<bf16>();
  bf16* hidden = hidden_.as<bf16>();
  const size_t layerPool = numSlots_ * s.kvDim();

  launchEmbedding(weight(config_.embedOffset), upload + L.tokenIds, output_.as<int>(), residual, T, s.hiddenSize,
                  inputTokens_.as<int>(), stream_);
  for (int l = 0; l < s.numLayers; l++) {
    const LayerOffsets& w = config_.layers[l];
    // Layer l > 0 first adds the previous layer's MLP output into the residual stream.
    launchAddRmsNorm(residual, l == 0 ? nullptr : proj_.as<bf16>(), nullptr, nullptr, weight(w.inNorm), hidden, T,
                     s.hiddenSize, s.rmsNormEps, stream_);
    gemm_->run(hidden, weight(w.qkvW), qkv_.as(), T, s.qkvDim(), s.hiddenSize, false, stream_);

    QkvRopeArgs rope{};
    rope.qkv = qkv_.as<bf16>();
    rope.bias = weight(w.qkvBias);
    rope.qNorm = weight(w.qNorm);
    rope.kNorm = weight(w.kNorm);
    rope.invFreq = invFreq_.as<float>();
    rope.positions = upload + L.positions;
    rope.slotMapping = upload + L.slotMapping;
    rope.kCache = kPool_.as<bf16>() + l * layerPool;
    rope.vCache = vPool_.as<bf16>() + l * layerPool;
    rope.numTokens = T;
    rope.numHeads = s.numHeads;
    rope.numKvHeads = s.numKvHeads;
    rope.headDim = s.headDim;
    rope.eps = s.rmsNormEps;
    if (!plan.fuseRope) launchQkvRope(rope, stream_);

    AttentionArgs attn{};
    attn.q = qkv_.as<bf16>();
    attn.qRowStride = s.qkvDim();
    attn.kCache = rope.kCache;
    attn.vCache = rope.vCache;
    attn.kvIndices = upload + L.kvIndices;
    attn.rowKvStart = upload + L.rowKvStart;
    attn.rowKvLen = upload + L.rowKvLen;
    attn.rowList = plan.rowList;
    attn.out = attnOut_.as<bf16>();
    attn.partial = partial_.as<float>();
    attn.numRows = plan.rows;
    attn.numHeads = s.numHeads;
    attn.numKvHeads = s.numKvHeads;
    attn.headDim = s.headDim;
    attn.scale = 1.f / std::sqrt(static_cast<float>(s.headDim));
    attn.numSplits = plan.numSplits;
    attn.splitSize = plan.splitSize;
    attn.fuseRope = plan.fuseRope;
    attn.rope = rope;
    if (l == s.numLayers - 1 && plan.sampledRowsOnlyInLastLayer) {
      const int S = L.numSampled;
      if (S == 0) return;  // a prompt chunk that samples nothing needed this layer's KV only
      bf16* sampledResidual = sampledResidual_.as<bf16>();
      // The embedding kernel gathers table rows by index: here the sampled rows of the residual stream.
      launchEmbedding(residual, upload + L.sampleRows, output_.as<int>(), sampledResidual, S, s.hiddenSize, nullptr,
                      stream_);
      const SplitChoice splits = chooseSplits(S, s.numHeads, s.numKvHeads, std::max(L.maxKvLen, L.maxPrefillKvLen),
                                              numSms_, partialRowSplits());
      attn.rowList = upload + L.sampleRows;
      attn.numRows = S;
      attn.compactOut = true;
      attn.numSplits = splits.numSplits;
      attn.splitSize = splits.splitSize;
      launchAttention(attn, stream_);
      runLayerTail(w, sampledResidual, S);
      return;
    }
    launchAttention(attn, stream_);
    if (plan.numTiles > 0) {
      PrefillAttentionArgs prefill{};
      prefill.q = attn.q;
      prefill.qRowStride = attn.qRowStride;
      prefill.kCache = attn.kCache;
      prefill.vCache = attn.vCache;
      prefill.kvIndices = attn.kvIndices;
      prefill.tiles = plan.tiles;
      prefill.numTiles = plan.numTiles;
      prefill.out = attn.out;
      prefill.partial = attn.partial;
      prefill.numRows = T;
      prefill.numSplits = plan.tileSplits;
      prefill.maxKvLen = L.maxPrefillKvLen;
      prefill.numHeads = s.numHeads;
      prefill.numKvHeads = s.numKvHeads;
      prefill.headDim = s.headDim;
      prefill.scale = attn.scale;
      prefill.wgmma = prefillWgmma_;
      prefill.clusterSplits = prefillClusterSplits_;
      prefill.numSms = numSms_;
      if (launchPrefillAttention(prefill, stream_)) clusterMergedLaunches_.fetch_add(1, std::memory_order_relaxed);
    }

    runLayerTail(w, residual, T);
  }
}

void ModelRunner::runLayerTail(const LayerOffsets& w, bf16* residual, int rows) {
  const ModelShape& s = config_.shape;
  bf16* hidden = hidden_.as<bf16>();
  bf16* proj = proj_.as<bf16>();
  gemm_->run(attnOut_.as<bf16>(), weight(w.oW), proj, rows, s.hiddenSize, s.qDim(), false, stream_);
  launchAddRmsNorm(residual, proj, weight(w.oBias), nullptr, weight(w.postNorm), hidden, rows, s.hiddenSize,
                   s.rmsNormEps, stream_);
  if (gemm_->fusesSwiglu(hidden, weight(w.gateUpW), act_.as<bf16>(), rows, s.intermediateSize, s.hiddenSize)) {
    // Few rows: the GEMV or the skinny GEMM streams gate and up rows together and applies SwiGLU in its epilogue.
    gemm_->runSwiglu(hidden, weight(w.gateUpW), act_.as<bf16>(), rows, s.intermediateSize, s.hiddenSize, stream_);
  } else {
    gemm_->run(hidden, weight(w.gateUpW), gateUp_.as(), rows, 2 * s.intermediateSize, s.hiddenSize, false, stream_);
    launchSwiglu(gateUp_.as<bf16>(), act_.as<bf16>(), rows, s.intermediateSize, stream_);
  }
  gemm_->run(act_.as<bf16>(), weight(w.downW), proj, rows, s.hiddenSize, s.intermediateSize, false, stream_);
}

void ModelRunner::runHead(const int* upload, int numSampled, bool compact) {
  const ModelShape& s = config_.shape;
  const StepLayout& L = *layout_;
  const int S = numSampled;
  const size_t V = static_cast<size_t>(s.vocabSize);
  // The last MLP output joins the residual only for the rows that are sampled (already gathered when compact).
  launchAddRmsNorm(compact ? sampledResidual_.as<bf16>() : residual_.as<bf16>(), proj_.as<bf16>(), nullptr,
                   compact ? nullptr : upload + L.sampleRows, weight(config_.finalNormOffset), sampledHidden_.as<bf16>(),
                   S, s.hiddenSize, s.rmsNormEps, stream_);
  float* logits = logits_.as<float>();
  gemm_->run(sampledHidden_.as<bf16>(), lmHead(), logits, S, s.vocabSize, s.hiddenSize, true, stream_);

  float* hostLogits = hostLogits_.as<float>();
  if (!L.sampling) {
    FERRUM_CUDA(cudaMemcpyAsync(hostLogits, logits, S * V * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    return;
  }
  // Host logits are copied before sampling modifies the rows in place (those rows are skipped by sampling).
  for (size_t i = 0; i < L.hostLogitRows.size(); i++) {
    FERRUM_CUDA(cudaMemcpyAsync(hostLogits + i * V, logits + L.hostLogitRows[i] * V, V * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_));
  }
  const int rows = config_.maxSampleRows;
  SamplingArgs sampling{};
  sampling.logits = logits;
  sampling.numRows = S;
  sampling.vocabSize = s.vocabSize;
  sampling.rowFloats = reinterpret_cast<const float*>(upload + L.rowFloats);
  sampling.rowInts = upload + L.rowInts;
  sampling.adjOffsets = upload + L.adjOffsets;
  sampling.adjSaved = adjSaved_.as<float>();
  sampling.allowedOffsets = upload + L.allowedOffsets;
  sampling.words = upload;
  sampling.sections = upload + L.samplingSections;
  sampling.sampleRows = upload + L.sampleRows;
  sampling.inputTokens = inputTokens_.as<int>();
  sampling.outTokens = output_.as<int>();
  sampling.outLogprobs = output_.as<float>() + rows;
  sampling.outTopIds = output_.as<int>() + topIdsWord();
  sampling.outTopLogprobs = output_.as<float>() + topLogprobsWord();
  sampling.greedySplits = greedySplitsFor(S, numSms_);
  sampling.greedyPartials = greedyPartials_.as<float>();
  sampling.greedyTickets = greedyTickets_.as<unsigned>();
  launchSampling(sampling, stream_);
}

}  // namespace ferrum
