// A loaded model: weights, KV pool, workspaces and thread pool, all allocated once at load. forward()
// allocates nothing.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "aligned-buffer.h"
#include "forward-batch.h"
#include "kernels.h"
#include "kv-pool.h"
#include "model-shape.h"
#include "model-weights.h"
#include "rope.h"
#include "thread-pool.h"

namespace ferrum {

struct ModelOptions {
  ModelShape shape;
  std::vector<TensorSource> tensors;
  bool dummy = false;
  uint64_t seed = 0;
  int numSlots = 0;
  int numHostSlots = 0;
  int maxBatchTokens = 0;
  int maxBatchSeqs = 0;
  /** Threads including the caller's; 0 means every usable CPU. */
  int numThreads = 0;
  /** Kernel table name (usableKernelNames()); empty picks defaultKernels(bf16Products, ...). */
  std::string kernels;
  /** With no table named: multiply bf16 weights as bf16 products where this CPU has a table for it. */
  bool bf16Products = false;
};

class Model {
 public:
  /** Sampled rows that go through the final norm and lm_head together. */
  static constexpr int kLogitRows = 32;

  /** Throws NativeError (invalid_argument, out_of_memory, and the weight loader's codes). */
  explicit Model(const ModelOptions& options);

  const ModelShape& shape() const { return shape_; }
  const KernelTable& kernels() const { return *kernels_; }
  int numThreads() const { return pool_.size(); }
  size_t weightBytes() const { return weights_.bytes(); }
  BatchLimits limits() const { return BatchLimits{maxBatchTokens_, maxBatchSeqs_, kv_.numSlots(), shape_.vocabSize}; }

  /** Serializes steps and KV transfers: hold it while calling forward() or touching kv(). */
  std::mutex& mutex() { return mutex_; }
  KvPool& kv() { return kv_; }
  ThreadPool& pool() { return pool_; }

  /** Runs one step. `batch` must have passed validateBatch(batch, limits()). */
  void forward(const BatchView& batch);

 private:
  void embed(const BatchView& batch);
  void attentionBlock(const BatchView& batch, int layer);
  void mlpBlock(int numTokens, int layer);
  void writeOutputs(const BatchView& batch);

  ModelShape shape_;
  int maxBatchTokens_;
  int maxBatchSeqs_;
  const KernelTable* kernels_;
  ThreadPool pool_;
  ModelWeights weights_;
  KvPool kv_;
  Rope rope_;
  std::mutex mutex_;

  // Workspaces, [maxBatchTokens][width] unless noted.
  AlignedBuffer hidden_, normed_, q_, k_, v_, attn_, gate_, up_, ropeCos_, ropeSin_, tokenSeq_, blockStarts_;
  AlignedBuffer scores_;      // [threads][attentionScratchFloats]
  AlignedBuffer logitRows_;   // [kLogitRows][hiddenSize]: final-normed sampled rows
  AlignedBuffer logits_;      // [kLogitRows][vocabSize]
  AlignedBuffer packed_;      // bf16-product tables: a projection's input as packActivations leaves it
  size_t scoresPerThread_;
};

}  // namespace ferrum
