// A model on one GPU: weights, the KV token pool and its pinned host tier, every workspace (all allocated
// once, here), and the step pipeline. stage() runs on the JS thread (validate and pack the batch into
// pinned memory); launch() and the KV operations run on the executor's worker thread, finish() (the wait for a
// launched step) on its completion thread, so a step staged behind one in flight is enqueued on the stream
// before the one in flight completes.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device-memory.h"
#include "gemm.h"
#include "model-shape.h"
#include "step-graphs.h"
#include "step-layout.h"
#include "weight-plan.h"

namespace ferrum {

/** Byte offsets into the weight arena of one layer's tensors; -1 when the model has none. */
struct LayerOffsets {
  int64_t qkvW, qkvBias, oW, oBias, qNorm, kNorm, inNorm, postNorm, gateUpW, downW;
};
constexpr int kLayerOffsetFields = 10;

struct RunnerConfig {
  ModelShape shape;
  int maxPositionEmbeddings = 0;
  std::vector<float> invFreq;  // [headDim / 2]
  WeightPlan weights;
  int64_t embedOffset = 0, finalNormOffset = 0, lmHeadOffset = -1;  // lm_head -1: tied to the embedding
  std::vector<LayerOffsets> layers;
  int maxBatchTokens = 0, maxBatchSeqs = 0, maxSampleRows = 0;
  uint64_t maxKvTokens = 0;  // 0: size from gpuMemoryUtilization
  double gpuMemoryUtilization = 0.9;
  uint64_t hostKvBytes = 0;
  int device = 0;
  bool enforceEager = false;  // never capture or replay CUDA graphs
  bool spinWait = true;       // host threads poll while steps run (host-spin.h)
};

/** How one step's attention divides between launchAttention (decode rows) and the prefill tiles. */
struct AttentionPlan {
  int rows = 0;                  // rows attended by launchAttention
  const int* rowList = nullptr;  // their batch rows on the device; null: rows 0 .. rows - 1
  int numSplits = 1, splitSize = 0;
  int numTiles = 0, tileSplits = 1;
  const int* tiles = nullptr;    // device [numTiles][4], see PrefillAttentionArgs
  bool fuseRope = false;         // every row its sequence's one new token: attention does launchQkvRope's work
  // The last layer past its KV write for the sampled rows only (an eager step with rows it does not sample):
  // their attention through launchAttention, o_proj and MLP at those rows, in compact buffers that runHead then
  // reads. Only the sampled rows' outputs ever use that work, so a 512-token prompt runs one row there instead of
  // 512 (llama.cpp's output-row selection).
  bool sampledRowsOnlyInLastLayer = false;
};

enum class KvTransfer { kCopy, kSwapOut, kSwapIn };

class ModelRunner {
 public:
  explicit ModelRunner(RunnerConfig config);
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  /**
   * JS thread: validate `view` and pack it into one of the two staging areas; returns which. `afterInFlight`:
   * another step is staged and not yet completed (overlap scheduling), so this one may not ask for host logits
   * (one host logits buffer). Throws NativeError.
   */
  int stage(const StepView& view, bool afterInFlight);
  /** Worker thread: enqueue the step staged in `staged` on the stream (its outputs to pinned host memory). */
  void launch(int staged);
  /**
   * Worker thread, after launch() and after the wait for that step has gone to the completion thread: when the
   * launched step's layout had run before, capture its graph for the steps of that layout after it (StepGraphs), so
   * that the capture's host time stays out of the launched step's result.
   */
  void captureRepeatedStep();
  /** Completion thread: wait for the launched step of `staged`; its outputs are then in pinned host memory. */
  void finish(int staged);
  /** launch, then finish. */
  void execute(int staged) {
    launch(staged);
    finish(staged);
  }
  /** After execute(staged): its layout and outputs (pinned host memory, valid until that area is staged again). */
  const StepLayout& layout(int staged) const { return staged_[staged].layout; }
  const int* sampledTokens(int staged) const { return staged_[staged].output.as<int>(); }
  const float* sampledLogprobs(int staged) const {
    return staged_[staged].output.as<float>() + config_.maxSampleRows;
  }
  /** The alternatives of layout(staged).topLogprobs steps: [numSampled][kMaxTopLogprobs] ids, then logprobs. */
  const int* topIds(int staged) const { return staged_[staged].output.as<int>() + topIdsWord(); }
  const float* topLogprobs(int staged) const { return staged_[staged].output.as<float>() + topLogprobsWord(); }
  const float* hostLogits() const { return hostLogits_.as<float>(); }

  /** Validate a slot transfer (any thread). Throws NativeError. */
  void checkTransfer(KvTransfer kind, const std::vector<int>& src, const std::vector<int>& dst) const;
  /** Worker thread: copy slots between pools; returns when done. */
  void transfer(KvTransfer kind, const std::vector<int>& src, const std::vector<int>& dst);

  const ModelShape& shape() const { return config_.shape; }
  bool spinWait() const { return config_.spinWait; }
  uint64_t numSlots() const { return numSlots_; }
  uint64_t numHostSlots() const { return numHostSlots_; }
  uint64_t weightBytes() const { return config_.weights.arenaBytes; }
  uint64_t kvPoolBytes() const { return numSlots_ * config_.shape.slotBytes(); }
  int maxSampleRows() const { return config_.maxSampleRows; }
  /** Steps replayed from a captured decode graph, and graphs captured so far. */
  uint64_t graphSteps() const { return graphSteps_.load(std::memory_order_relaxed); }
  /** Prefill attention launches (a layer each) whose kv splits were merged in thread-block clusters. */
  uint64_t clusterMergedLaunches() const { return clusterMergedLaunches_.load(std::memory_order_relaxed); }
  /** GPU time of every step so far (CUDA events around each step's stream work), in nanoseconds. */
  uint64_t gpuStepNanos() const { return gpuStepNanos_.load(std::memory_order_relaxed); }
  size_t graphsCaptured() const {
    size_t count = 0;
    for (const auto& entry : graphs_) count += entry.second != nullptr ? 1 : 0;
    return count;
  }
  /** Eager steps replayed from a graph of their layout (StepGraphs), and such graphs captured so far. */
  uint64_t stepGraphSteps() const { return stepGraphSteps_.load(std::memory_order_relaxed); }
  uint64_t stepGraphsCaptured() const { return stepGraphsCaptured_.load(std::memory_order_relaxed); }

 private:
  void allocateWorkspaces();
  void allocateKvPools();
  bf16* weight(int64_t offset) const;
  void runLayers(const int* upload, int numTokens, const AttentionPlan& attention);
  /** Layer `w` after attention for `rows` rows: o_proj, add+RMSNorm into `residual`, MLP; output in proj_. */
  void runLayerTail(const LayerOffsets& w, bf16* residual, int rows);
  /**
   * Final norm, lm_head and sampling of the sampled rows. `compact`: the last layer ran for those rows only, so
   * their residual and MLP output are rows 0 .. numSampled - 1 of sampledResidual_ and proj_.
   */
  void runHead(const int* upload, int numSampled, bool compact);
  /** The launches of the step at layout_ one by one, each sized to it (a graph-layout step runs its real rows only). */
  void runEager(const int* upload);
  /**
   * Captures what `launches` enqueues on the stream into an executable graph without running it; null (and a line on
   * stderr naming `what`) when capture or instantiation fails.
   */
  cudaGraphExec_t captureGraph(const std::string& what, const std::function<void()>& launches);
  /** Decode-graph bucket for `numSeqs` single-token rows, or 0 when graphs are off or it is too large. */
  int graphBucket(int numSeqs) const;
  /** Pack a pure-decode step at the fixed offsets of its bucket's graph; false when it does not fit one. */
  bool stageDecodeGraph(const StepView& view, StepLayout& layout, int* words);
  /** Pack a step of any shape (after stage()'s checks) into `words`. */
  void stagePacked(const StepView& view, StepLayout& layout, int* words);
  /** Check `view.previous*` against the step staged before it and point those rows at its samples. */
  void stagePreviousTokens(const StepView& view, const StepLayout& layout, int* words) const;
  /** Tune and capture every bucket's graph from a synthetic decode step (at load, so no request pays for it). */
  void captureDecodeGraphs();
  /** The executable graph of `bucket`, captured on first use from the staged (graph-layout) step. */
  cudaGraphExec_t decodeGraph(int bucket);
  /** Pick the fastest cuBLASLt algorithm of every GEMM shape a step of `rows` tokens runs (before capture). */
  void tuneGemms(int rows);
  /** tuneGemms for the layers' products only (prefill row counts: lm_head takes only the sampled rows). */
  void tuneLayerGemms(int rows);
  /** Gemm::prepare for every product a step of `rows` rows runs (lm_head where that many rows can be sampled). */
  void prepareGemms(int rows);
  /** A layer's product as the step runs it: y = x · wᵀ, n outputs of k inputs, on the step's workspaces. */
  struct LayerProduct {
    const bf16* x;
    const bf16* w;
    void* y;
    int n, k;
    bool gated;  // gate|up: the fused SwiGLU GEMV where it takes the rows
  };
  /** The layer products of layer 0 (every layer has the same shapes). */
  std::vector<LayerProduct> layerProducts() const;
  const bf16* lmHead() const;
  /** Attention splits of a decode graph: chosen for long contexts, the split size decided per row on device. */
  int graphSplits(int bucket) const;
  /** Rows × splits the attention partials workspace holds. */
  size_t partialRowSplits() const;
  // The sampling outputs, device and pinned alike, in words: tokens and logprobs of every row, then the alternatives'
  // ids and logprobs (kMaxTopLogprobs a row).
  size_t topIdsWord() const { return 2 * static_cast<size_t>(config_.maxSampleRows); }
  size_t topLogprobsWord() const { return topIdsWord() + static_cast<size_t>(config_.maxSampleRows) * kMaxTopLogprobs; }
  size_t outputWords() const { return topLogprobsWord() + static_cast<size_t>(config_.maxSampleRows) * kMaxTopLogprobs; }

  RunnerConfig config_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;  // KV transfers
  int numSms_ = 0;
  bool prefillWgmma_ = false;  // prefillWgmmaAvailable on this device
  bool prefillClusterSplits_ = false;  // prefillClusterSplitsAvailable on this device
  uint64_t numSlots_ = 0, numHostSlots_ = 0;
  StepCapacity capacity_;
  /**
   * A staged step: its packed upload, layout, and sampled tokens and logprobs. Two, used in turn, so the JS
   * thread stages step N + 1 while the worker runs step N; the device upload buffer is one (the copies are
   * stream-ordered).
   */
  struct StagedStep {
    PinnedBuffer upload, output;
    StepLayout layout;
    cudaEvent_t start = nullptr, end = nullptr;  // timing of gpuStepNanos
    cudaEvent_t done = nullptr;                  // the step's stream work, outputs copied
  };
  StagedStep staged_[2];
  int nextStaged_ = 0;  // JS thread
  // Worker thread: the layout runEager, runLayers and runHead launch (the launched step's, or captureLayout_).
  const StepLayout* layout_ = nullptr;
  // A repeated layout's capture, left by launch() for captureRepeatedStep(): a copy, since the JS thread may stage a
  // new step into that area once the launched one completes.
  StepLayout captureLayout_;
  bool capturePending_ = false;
  // The last staged step's samples, for the next step's previous tokens: count, and which the device drew.
  int lastNumSampled_ = 0;
  std::vector<char> lastDeviceSampled_;

  DeviceBuffer arena_, invFreq_, gemmWorkspace_;
  DeviceBuffer residual_, hidden_, qkv_, attnOut_, gateUp_, act_, proj_, sampledHidden_, logits_, partial_;
  DeviceBuffer sampledResidual_;  // the sampled rows' residual stream in the last layer (sampledRowsOnlyInLastLayer)
  DeviceBuffer kPool_, vPool_;
  PinnedBuffer hostK_, hostV_;
  PinnedBuffer hostLogits_, hostKvIndices_;
  DeviceBuffer upload_, output_, adjSaved_, kvIndices_;
  DeviceBuffer inputTokens_;  // each row's input token as the embedding read it (SamplingArgs::inputTokens)
  DeviceBuffer greedyPartials_, greedyTickets_;  // split greedy sampling (launchSampling)
  std::unique_ptr<Gemm> gemm_;
  std::vector<int> buckets_;                      // ascending decode-graph batch sizes
  std::map<int, cudaGraphExec_t> graphs_;         // bucket -> executable graph (nullptr: capture failed)
  bool stepGraphsOn_ = false;                     // replay repeated eager layouts (StepGraphs)
  StepGraphs stepGraphs_;
  // Written by the worker thread, read by Info on the JS thread.
  std::atomic<uint64_t> graphSteps_{0};
  std::atomic<uint64_t> stepGraphSteps_{0};
  std::atomic<uint64_t> stepGraphsCaptured_{0};
  std::atomic<uint64_t> clusterMergedLaunches_{0};
  std::atomic<uint64_t> gpuStepNanos_{0};
};

}  // namespace ferrum
