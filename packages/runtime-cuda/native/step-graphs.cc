#include "step-graphs.h"

#include <algorithm>
#include <tuple>

namespace ferrum {
namespace {

// Every field of StepLayout but `words` (the upload's length, which sets only the copy before the launches).
auto launchFields(const StepLayout& l) {
  return std::tie(l.numTokens, l.numSeqs, l.numSampled, l.numDecodeRows, l.maxKvLen, l.numPrefillTiles,
                  l.maxPrefillKvLen, l.sampling, l.topLogprobs, l.graphBucket, l.tokenIds, l.positions, l.slotMapping,
                  l.rowKvStart, l.rowKvLen, l.kvIndices, l.sampleRows, l.rowFloats, l.rowInts, l.adjOffsets,
                  l.allowedOffsets, l.samplingSections, l.decodeRows, l.prefillTiles, l.hostLogitRows);
}

// Whether two layouts launch the same kernels with the same arguments.
bool sameLaunches(const StepLayout& a, const StepLayout& b) { return launchFields(a) == launchFields(b); }

}  // namespace

StepGraphs::StepGraphs() {
  graphs_.reserve(kMaxGraphs);
  seen_.resize(kMaxSeen);
}

StepGraphs::~StepGraphs() {
  for (const Graph& g : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
}

const StepGraphs::Graph* StepGraphs::find(const StepLayout& layout) {
  for (Graph& g : graphs_) {
    if (sameLaunches(g.layout, layout)) {
      g.lastUse = ++clock_;
      return &g;
    }
  }
  return nullptr;
}

bool StepGraphs::ranBefore(const StepLayout& layout) {
  // An empty slot (numTokens 0) matches no step that reaches here: every launched eager step has tokens.
  for (const StepLayout& s : seen_) {
    if (s.numTokens > 0 && sameLaunches(s, layout)) return true;
  }
  seen_[nextSeen_] = layout;  // assignments keep each slot's capacity: no allocation once warm
  nextSeen_ = (nextSeen_ + 1) % kMaxSeen;
  return false;
}

void StepGraphs::insert(const StepLayout& layout, cudaGraphExec_t exec, uint64_t clusterMerged) {
  Graph* slot = nullptr;
  if (graphs_.size() < kMaxGraphs) {
    slot = &graphs_.emplace_back();
  } else {
    slot = &*std::min_element(graphs_.begin(), graphs_.end(),
                              [](const Graph& a, const Graph& b) { return a.lastUse < b.lastUse; });
    // A replay of it may still run: the driver frees an executable graph in flight when it completes.
    if (slot->exec != nullptr) cudaGraphExecDestroy(slot->exec);
  }
  slot->layout = layout;
  slot->exec = exec;
  slot->clusterMerged = clusterMerged;
  slot->lastUse = ++clock_;
}

}  // namespace ferrum
