// Eager steps replayed as CUDA graphs. A step that is not a decode-graph step launches ~300 kernels one by one; when
// a step of the same layout (every StepLayout field the launches read: counts, upload offsets, host-logit rows) has
// run before, the launches are captured once into a graph (ModelRunner::captureRepeatedStep, on the worker thread
// after the step's wait has gone to the completion thread) and later steps of that layout replay it. The launches are
// the same kernels with the same arguments, so the results are the same bits; their contents (tokens, slots,
// sampling rows) come from the upload as before. On the H100 (Qwen3-4B shape, dummy weights) a 512-token prefill
// took 7.48-7.57 ms of GPU time eager and 7.20-7.25 replayed, an agent turn (64 new tokens over 2,000 cached)
// 4.41-4.49 and 4.28-4.32 (bench/results/cuda-step-graphs-2026-11-23-pass38.md). Repeated layouts are common
// where requests share a shape: prompts of one length, agent turns over one system prompt.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "step-layout.h"

namespace ferrum {

/**
 * The executable graphs of eager step layouts, at most kMaxGraphs, least recently used evicted; a layout is captured
 * the second time it runs (its first run may be its only one). A capture holds the worker thread ~4 ms on the H100
 * (Qwen3-4B: 36 layers), delaying the launch of the step after it, so the cache is large enough that a workload
 * cycling through a few dozen repeated layouts does not capture again and again. Worker thread only.
 */
class StepGraphs {
 public:
  static constexpr size_t kMaxGraphs = 32;
  /** Layouts remembered as run once. */
  static constexpr size_t kMaxSeen = 64;

  struct Graph {
    StepLayout layout;
    cudaGraphExec_t exec = nullptr;  // nullptr: its capture failed; the layout runs eagerly
    uint64_t clusterMerged = 0;      // cluster-merged prefill attention launches in it
    uint64_t lastUse = 0;
  };

  StepGraphs();
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  /** The graph of `layout` (its exec null where capture failed), or null when it has none. */
  const Graph* find(const StepLayout& layout);
  /** After an eager run of `layout` with no graph: whether it ran before, so that it is worth capturing now. */
  bool ranBefore(const StepLayout& layout);
  /** Keeps `exec` (owned from now on) for `layout`, evicting the least recently used graph when full. */
  void insert(const StepLayout& layout, cudaGraphExec_t exec, uint64_t clusterMerged);

 private:
  std::vector<Graph> graphs_;
  std::vector<StepLayout> seen_;  // a ring of kMaxSeen layouts run once
  size_t nextSeen_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace ferrum
