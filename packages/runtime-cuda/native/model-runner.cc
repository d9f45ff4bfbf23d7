#include "model-runner.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cuda-check.h"
#include "env-switch.h"
#include "kernels/head-dims.h"

namespace ferrum {
namespace {

constexpr size_t kGemmWorkspaceBytes = 32u << 20;

size_t bf16Bytes(size_t count) { return count * 2; }

}  // namespace

ModelRunner::ModelRunner(RunnerConfig config) : config_(std::move(config)) {
  const ModelShape& s = config_.shape;
  if (!BuiltHeadDims::contains(s.headDim)) throw unsupportedHeadDim("runtime-cuda", s.headDim);
  if (s.hiddenSize % 8 != 0 || s.intermediateSize % 8 != 0) {
    throw NativeError("unsupported_architecture", "runtime-cuda needs hidden and intermediate sizes divisible by 8");
  }
  if (config_.maxBatchTokens > 65535) {
    throw NativeError("invalid_argument", "runtime-cuda supports maxBatchTokens up to 65535");
  }
  FERRUM_CUDA(cudaSetDevice(config_.device));
  FERRUM_CUDA(cudaDeviceGetAttribute(&numSms_, cudaDevAttrMultiProcessorCount, config_.device));
  int major = 0;
  FERRUM_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, config_.device));
  // Programmatic dependent launch (kernels/launch.cuh) needs Hopper; FERRUM_CUDA_PDL=0 turns it off, to
  // measure what it brings or to rule it out.
  setProgrammaticLaunch(major >= 9 && switchedOn("FERRUM_CUDA_PDL"));
  prefillWgmma_ = prefillWgmmaAvailable(config_.device);
  prefillClusterSplits_ = prefillClusterSplitsAvailable(config_.device);
  if (prefillAttentionSupportsHeadDim(s.headDim)) {
    PrefillAttentionArgs prefill{};
    prefill.headDim = s.headDim;
    prefill.numHeads = s.numHeads;
    prefill.numKvHeads = s.numKvHeads;
    prefill.wgmma = prefillWgmma_;
    prefill.clusterSplits = prefillClusterSplits_;
    preloadPrefillAttention(prefill);
  }
  FERRUM_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // The completion thread waits on each step's `done` event. Without the blocking-sync flag that wait spins and
  // returns within microseconds of the step's end; a blocking wait sleeps and costs ~0.1 ms a step (H100,
  // Qwen3-4B shape: agent-turn step wall 5.07-5.18 against 5.15-5.37 ms and one 5.79, runtime decode B=1 with
  // each step awaited 303 against 290 tok/s; bench/results/cuda-speed-2026-11-22-pass9.md), at the price of a core
  // busy while a step runs. `spinWait` false keeps the blocking wait (host-spin.h).
  const unsigned doneFlags = cudaEventDisableTiming | (config_.spinWait ? 0u : cudaEventBlockingSync);
  FERRUM_CUDA(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming | cudaEventBlockingSync));
  for (StagedStep& step : staged_) {
    FERRUM_CUDA(cudaEventCreate(&step.start));
    FERRUM_CUDA(cudaEventCreate(&step.end));
    FERRUM_CUDA(cudaEventCreateWithFlags(&step.done, doneFlags));
  }
  arena_ = DeviceBuffer(config_.weights.arenaBytes);
  loadWeights(config_.weights, arena_.as<char>(), stream_);
  invFreq_ = DeviceBuffer(config_.invFreq.size() * sizeof(float));
  FERRUM_CUDA(cudaMemcpy(invFreq_.as(), config_.invFreq.data(), invFreq_.bytes(), cudaMemcpyHostToDevice));
  allocateWorkspaces();
  allocateKvPools();
  stepGraphsOn_ = !config_.enforceEager && switchedOn("FERRUM_CUDA_STEP_GRAPHS");
  // Decode-graph buckets: powers of two up to the most single-token rows a step can hold, and that bound.
  if (!config_.enforceEager) {
    const int most = std::min({config_.maxBatchSeqs, config_.maxSampleRows, config_.maxBatchTokens});
    for (int bucket = 1; bucket < most; bucket *= 2) buckets_.push_back(bucket);
    buckets_.push_back(most);
    captureDecodeGraphs();
  }
  // Large prefill steps: powers of two from kSharedTuningMinRows, and the step's token budget. A step of another
  // size from kSharedTuningMinRows takes the algorithm tuned for the next of these up (Gemm::prepareCublas).
  for (int rows = kSharedTuningMinRows; rows < config_.maxBatchTokens; rows *= 2) tuneLayerGemms(rows);
  if (config_.maxBatchTokens >= kSharedTuningMinRows) tuneLayerGemms(config_.maxBatchTokens);
  // Every smaller row count past the GEMV's planned now, so that no step stalls on cuBLASLt's choice of an
  // algorithm or on loading its kernel (Gemm::prepare; each row count keeps the heuristic's own choice: lending one
  // count's algorithm to its neighbours made a 300-token prefill 27% slower on the H100).
  const int prepareTop = std::min(kSharedTuningMinRows - 1, config_.maxBatchTokens);
  for (int rows = kGemvMaxRows + 1; rows <= prepareTop; rows++) prepareGemms(rows);
  FERRUM_CUDA(cudaStreamSynchronize(stream_));
}

ModelRunner::~ModelRunner() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (auto& entry : graphs_) {
    if (entry.second != nullptr) cudaGraphExecDestroy(entry.second);
  }
  gemm_.reset();
  if (done_ != nullptr) cudaEventDestroy(done_);
  for (StagedStep& step : staged_) {
    for (cudaEvent_t event : {step.start, step.end, step.done}) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

bf16* ModelRunner::weight(int64_t offset) const {
  return offset < 0 ? nullptr : reinterpret_cast<bf16*>(arena_.as<char>() + offset);
}

void ModelRunner::allocateWorkspaces() {
  const ModelShape& s = config_.shape;
  const size_t t = static_cast<size_t>(config_.maxBatchTokens);
  const size_t rows = static_cast<size_t>(config_.maxSampleRows);
  gemmWorkspace_ = DeviceBuffer(kGemmWorkspaceBytes);
  gemm_ = std::make_unique<Gemm>(gemmWorkspace_.as(), kGemmWorkspaceBytes);
  residual_ = DeviceBuffer(bf16Bytes(t * s.hiddenSize));
  hidden_ = DeviceBuffer(bf16Bytes(t * s.hiddenSize));
  qkv_ = DeviceBuffer(bf16Bytes(t * s.qkvDim()));
  attnOut_ = DeviceBuffer(bf16Bytes(t * s.qDim()));
  gateUp_ = DeviceBuffer(bf16Bytes(t * 2 * s.intermediateSize));
  act_ = DeviceBuffer(bf16Bytes(t * s.intermediateSize));
  proj_ = DeviceBuffer(bf16Bytes(t * s.hiddenSize));
  sampledHidden_ = DeviceBuffer(bf16Bytes(rows * s.hiddenSize));
  sampledResidual_ = DeviceBuffer(bf16Bytes(rows * s.hiddenSize));
  logits_ = DeviceBuffer(rows * s.vocabSize * sizeof(float));
  // Split-K partials: rows × splits is capped so that long decode batches still fit (see step-execute.cc).
  const size_t rowSplits = std::max<size_t>(static_cast<size_t>(config_.maxBatchSeqs) * kMaxSplits, 64);
  partial_ = DeviceBuffer(rowSplits * s.numHeads * (s.headDim + 2) * sizeof(float));
  output_ = DeviceBuffer(outputWords() * sizeof(int));
  inputTokens_ = DeviceBuffer(t * sizeof(int));
  greedyPartials_ = DeviceBuffer(rows * kMaxGreedySplits * 3 * sizeof(float));
  greedyTickets_ = DeviceBuffer(rows * sizeof(unsigned));
  // On the runner's stream (non-blocking, so a legacy-stream memset would not be ordered before its kernels).
  FERRUM_CUDA(cudaMemsetAsync(greedyTickets_.as(), 0, greedyTickets_.bytes(), stream_));
  hostLogits_ = PinnedBuffer(rows * s.vocabSize * sizeof(float), false);
  for (StagedStep& step : staged_) {
    step.output = PinnedBuffer(outputWords() * sizeof(int), false);
    step.layout.hostLogitRows.reserve(rows);
  }
  lastDeviceSampled_.assign(rows, 0);
}

// Profile-then-allocate: everything else is in place, so free memory now is what the pool may take.
void ModelRunner::allocateKvPools() {
  const ModelShape& s = config_.shape;
  const size_t slotBytes = s.slotBytes();
  size_t freeBytes = 0, totalBytes = 0;
  FERRUM_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  if (config_.maxKvTokens > 0) {
    numSlots_ = config_.maxKvTokens;
    if (numSlots_ * slotBytes > freeBytes) {
      throw NativeError("out_of_memory", "maxKvTokens " + std::to_string(numSlots_) + " needs " +
                                             std::to_string(numSlots_ * slotBytes >> 20) + " MiB, only " +
                                             std::to_string(freeBytes >> 20) + " MiB free");
    }
  } else {
    const double budget = config_.gpuMemoryUtilization * static_cast<double>(totalBytes) -
                          static_cast<double>(totalBytes - freeBytes);
    numSlots_ = budget > 0 ? static_cast<uint64_t>(budget / static_cast<double>(slotBytes)) : 0;
    if (numSlots_ == 0) {
      throw NativeError("out_of_memory", "no memory left for the KV pool: weights and workspaces use " +
                                             std::to_string((totalBytes - freeBytes) >> 20) + " MiB of " +
                                             std::to_string(totalBytes >> 20) + " MiB (gpuMemoryUtilization " +
                                             std::to_string(config_.gpuMemoryUtilization) + ")");
    }
  }
  const size_t poolBytes = numSlots_ * slotBytes / 2;  // K and V halves
  kPool_ = DeviceBuffer(poolBytes);
  vPool_ = DeviceBuffer(poolBytes);
  numHostSlots_ = std::min<uint64_t>(config_.hostKvBytes / slotBytes, numSlots_);
  hostK_ = PinnedBuffer(numHostSlots_ * slotBytes / 2, true);
  hostV_ = PinnedBuffer(numHostSlots_ * slotBytes / 2, true);
  std::fprintf(stderr, "runtime-cuda: KV pool %llu tokens (%.2f GiB), host swap tier %llu tokens, weights %.2f GiB\n",
               static_cast<unsigned long long>(numSlots_), static_cast<double>(numSlots_ * slotBytes) / (1 << 30),
               static_cast<unsigned long long>(numHostSlots_),
               static_cast<double>(config_.weights.arenaBytes) / (1 << 30));

  // Step capacities that depend on the pool: a batch's kv lists cover at most every slot twice over
  // (shared prefixes appear once per sequence) and never more than maxBatchSeqs full contexts.
  capacity_.tokens = config_.maxBatchTokens;
  capacity_.seqs = config_.maxBatchSeqs;
  capacity_.sampleRows = config_.maxSampleRows;
  capacity_.kvIndices = std::max<size_t>(
      capacity_.tokens, std::min<size_t>(capacity_.seqs * static_cast<size_t>(config_.maxPositionEmbeddings),
                                         2 * numSlots_ + capacity_.tokens));
  capacity_.adjustments = capacity_.kvIndices + capacity_.sampleRows * 1024;
  capacity_.allowed = capacity_.sampleRows * 4096;
  for (StagedStep& step : staged_) step.upload = PinnedBuffer(capacity_.words() * 4, false);
  upload_ = DeviceBuffer(capacity_.words() * 4);
  adjSaved_ = DeviceBuffer(capacity_.adjustments * sizeof(float));
  const size_t transferCapacity = 2 * std::max(numSlots_, numHostSlots_);
  hostKvIndices_ = PinnedBuffer(transferCapacity * sizeof(int), false);
  kvIndices_ = DeviceBuffer(transferCapacity * sizeof(int));
}

void ModelRunner::checkTransfer(KvTransfer kind, const std::vector<int>& src, const std::vector<int>& dst) const {
  if (src.size() != dst.size()) throw NativeError("invalid_argument", "slot transfer: src and dst lengths differ");
  if (src.size() > std::max(numSlots_, numHostSlots_)) {
    throw NativeError("invalid_argument", "slot transfer: more pairs than slots");
  }
  const uint64_t srcLimit = kind == KvTransfer::kSwapIn ? numHostSlots_ : numSlots_;
  const uint64_t dstLimit = kind == KvTransfer::kSwapOut ? numHostSlots_ : numSlots_;
  for (size_t i = 0; i < src.size(); i++) {
    if (src[i] < 0 || static_cast<uint64_t>(src[i]) >= srcLimit || dst[i] < 0 ||
        static_cast<uint64_t>(dst[i]) >= dstLimit) {
      throw NativeError("invalid_argument", "slot transfer: pair " + std::to_string(i) + " (" + std::to_string(src[i]) +
                                                " -> " + std::to_string(dst[i]) + ") is out of range");
    }
  }
}

void ModelRunner::transfer(KvTransfer kind, const std::vector<int>& src, const std::vector<int>& dst) {
  FERRUM_CUDA(cudaSetDevice(config_.device));
  const ModelShape& s = config_.shape;
  const size_t count = src.size();
  if (count == 0) return;
  int* host = hostKvIndices_.as<int>();
  std::copy(src.begin(), src.end(), host);
  std::copy(dst.begin(), dst.end(), host + count);
  FERRUM_CUDA(cudaMemcpyAsync(kvIndices_.as(), host, 2 * count * sizeof(int), cudaMemcpyHostToDevice, stream_));
  const int* deviceSrc = kvIndices_.as<int>();
  const int* deviceDst = deviceSrc + count;
  const bf16* fromK = kind == KvTransfer::kSwapIn ? hostK_.device<bf16>() : kPool_.as<bf16>();
  const bf16* fromV = kind == KvTransfer::kSwapIn ? hostV_.device<bf16>() : vPool_.as<bf16>();
  bf16* toK = kind == KvTransfer::kSwapOut ? hostK_.device<bf16>() : kPool_.as<bf16>();
  bf16* toV = kind == KvTransfer::kSwapOut ? hostV_.device<bf16>() : vPool_.as<bf16>();
  const size_t fromSlots = kind == KvTransfer::kSwapIn ? numHostSlots_ : numSlots_;
  const size_t toSlots = kind == KvTransfer::kSwapOut ? numHostSlots_ : numSlots_;
  launchKvCopy(fromK, fromV, fromSlots, toK, toV, toSlots, deviceSrc, deviceDst, static_cast<int>(count), s.numLayers,
               s.kvDim(), stream_);
  FERRUM_CUDA(cudaEventRecord(done_, stream_));
  FERRUM_CUDA(cudaEventSynchronize(done_));
}

}  // namespace ferrum
