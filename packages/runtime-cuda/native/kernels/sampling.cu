// The built-in sampling chain on the device, one 1024-thread block per sampled row (a plain greedy row takes
// several, sampleGreedyPlain), with the semantics of @ferrum/sampler so a seeded request draws the same token on
// either path:
//   raw log-sum-exp (for raw logprobs) → sparse adjustments (bans, logit bias, repetition penalty, then
//   presence/frequency) → allowed-ids mask → greedy argmax (lowest id on ties), or
//   temperature, min-p (w = exp((l - max) / T) >= minP), top-k (l >= the k-th largest logit, ties kept),
//   top-p (keep a token iff the kept mass of strictly larger logits is < topP × kept mass), then an
//   inverse-CDF draw in ascending id order with u = seededUniform(seed, step).
// Thresholds are keys (order-preserving 32-bit maps of the logits) found from a short sorted candidate list, or by
// bitwise search over the row where the list does not hold them (sampling-truncation.cuh).
// A row that asks for alternatives lists them (sampling-top.cuh) from the raw logits before the adjustments, or
// from the distribution it was drawn from (processed: after them, truncation and temperature included).
#include <algorithm>
#include <climits>
#include <cub/block/block_scan.cuh>

#include "../cuda-check.h"
#include "kernels.h"
#include "launch.cuh"
#include "sampling-block.cuh"
#include "sampling-top.cuh"
#include "sampling-truncation.cuh"

namespace ferrum {
namespace {

using sampling::blockReduce;
using sampling::kThreads;
using sampling::orderedKey;
using sampling::Row;
using sampling::Sum;

/** @ferrum/sampler's seededUniform: the `counter`-th output of SplitMix64 seeded with `seed`. */
__device__ __forceinline__ double seededUniform(uint32_t seed, uint32_t counter) {
  const uint64_t x = static_cast<uint64_t>(seed) + (static_cast<uint64_t>(counter) + 1) * 0x9E3779B97F4A7C15ull;
  uint64_t z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct MaxInt {
  __device__ int operator()(int a, int b) const { return max(a, b); }
};
struct MinInt {
  __device__ int operator()(int a, int b) const { return min(a, b); }
};

/** Below this exp() is 0 in double precision (ln of the smallest subnormal double). */
constexpr float kDoubleExpUnderflow = -745.13f;

__device__ bool isAllowed(const int* ids, int count, int id) {
  int lo = 0, hi = count;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (ids[mid] < id) lo = mid + 1; else hi = mid;
  }
  return lo < count && ids[lo] == id;
}

// Running (max, sum of exp(l - max), lowest id of the max) over a row: the greedy pick and its log-softmax in
// one pass. -inf logits add nothing.
struct GreedyScan {
  float max = -INFINITY, sum = 0.f;
  int arg = INT_MAX;
  __device__ void visit(float l, int i) {
    if (l > max) {
      sum = sum * __expf(max - l) + 1.f;  // 0 × 0 while max is -inf
      max = l;
      arg = i;
    } else if (l > -INFINITY) {
      sum += __expf(l - max);
      if (l == max && i < arg) arg = i;
    }
  }
  __device__ void merge(float otherMax, float otherSum, int otherArg) {
    const float m = fmaxf(max, otherMax);
    if (m == -INFINITY) return;
    sum = (max == -INFINITY ? 0.f : sum * __expf(max - m)) + (otherMax == -INFINITY ? 0.f : otherSum * __expf(otherMax - m));
    arg = max == otherMax ? min(arg, otherArg) : (otherMax > max ? otherArg : arg);
    max = m;
  }
  __device__ void mergeLanes() {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      merge(__shfl_xor_sync(0xffffffffu, max, offset), __shfl_xor_sync(0xffffffffu, sum, offset),
            __shfl_xor_sync(0xffffffffu, arg, offset));
    }
  }
};

// A greedy row with no adjustments or allowed list: the processed logits are the raw ones, so one pass
// (16-byte loads where the row allows) gives the token, the lowest id of the maximum, and -log Σ exp(l - max),
// its raw and processed logprob alike. The pass is cut into gridDim.y slices, one block each, so a row's
// 150k-entry read is not bound by one multiprocessor's bandwidth (one block took ~35 µs for a Qwen3 vocabulary
// on the H100); each block leaves its (max, sum, argmax) in greedyPartials and the last block to finish, by
// the row's ticket, merges them.
__device__ __noinline__ void sampleGreedyPlain(const SamplingArgs& a, const float* row, int r, float* floatScratch,
                                  int* intScratch, float* sumScratch) {
  const int V = a.vocabSize;
  const int splits = gridDim.y;
  // Slices of whole float4s, so each starts 16-byte aligned when the row does.
  const int per = ((V + splits - 1) / splits + 3) & ~3;
  const int begin = min(V, static_cast<int>(blockIdx.y) * per), end = min(V, begin + per);
  GreedyScan scan;
  const bool aligned = reinterpret_cast<uintptr_t>(row) % 16 == 0;
  const int vectorEnd = aligned ? begin + (end - begin) / 4 * 4 : begin;
  for (int i = begin / 4 + threadIdx.x; i < vectorEnd / 4; i += kThreads) {
    const float4 v = reinterpret_cast<const float4*>(row)[i];
    scan.visit(v.x, 4 * i);
    scan.visit(v.y, 4 * i + 1);
    scan.visit(v.z, 4 * i + 2);
    scan.visit(v.w, 4 * i + 3);
  }
  for (int i = vectorEnd + threadIdx.x; i < end; i += kThreads) scan.visit(row[i], i);
  scan.mergeLanes();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    floatScratch[warp] = scan.max;
    sumScratch[warp] = scan.sum;
    intScratch[warp] = scan.arg;
  }
  __syncthreads();
  if (warp != 0) return;
  GreedyScan block;
  block.max = floatScratch[lane];  // kThreads / 32 == 32 warps: every lane has an entry
  block.sum = sumScratch[lane];
  block.arg = intScratch[lane];
  block.mergeLanes();
  if (splits > 1) {
    float* mine = a.greedyPartials + (static_cast<size_t>(r) * kMaxGreedySplits + blockIdx.y) * 3;
    unsigned ticket = 0;
    if (lane == 0) {
      mine[0] = block.max;
      mine[1] = block.sum;
      mine[2] = __int_as_float(block.arg);
      __threadfence();  // the partial is visible before the ticket counts it
      ticket = atomicAdd(a.greedyTickets + r, 1u);
    }
    if (__shfl_sync(0xffffffffu, ticket, 0) != static_cast<unsigned>(splits - 1)) return;
    __threadfence();
    // The last block: lane s takes slice s's partial (L2 reads: other blocks wrote them).
    const float* all = a.greedyPartials + static_cast<size_t>(r) * kMaxGreedySplits * 3;
    block = GreedyScan{};
    if (lane < splits) {
      block.max = __ldcg(all + 3 * lane);
      block.sum = __ldcg(all + 3 * lane + 1);
      block.arg = __float_as_int(__ldcg(all + 3 * lane + 2));
    }
    block.mergeLanes();
    if (lane == 0) a.greedyTickets[r] = 0;
  }
  if (lane == 0) {
    const bool any = block.max > -INFINITY;
    a.outTokens[r] = any ? block.arg : kNothingToSample;
    a.outLogprobs[r] = any ? -logf(block.sum) : NAN;
  }
}

/** SamplingArgs' variable-length sections, found through its `sections` header. */
struct Sections {
  const int* adjIds;
  const float* adjPre;
  const float* adjPost;
  const int* adjFlags;
  const int* allowedIds;
  __device__ explicit Sections(const SamplingArgs& a)
      : adjIds(a.words + a.sections[0]),
        adjPre(reinterpret_cast<const float*>(a.words + a.sections[1])),
        adjPost(reinterpret_cast<const float*>(a.words + a.sections[2])),
        adjFlags(a.words + a.sections[3]),
        allowedIds(a.words + a.sections[4]) {}
};

__global__ void __launch_bounds__(kThreads) samplingKernel(SamplingArgs a) {
  using Scan = cub::BlockScan<double, kThreads>;
  __shared__ typename Scan::TempStorage scanStorage;
  __shared__ float floatScratch[32];
  __shared__ int intScratch[32];
  __shared__ float sumScratch[32];
  __shared__ int chosen;
  __shared__ float rawChosen;
  __shared__ bool countedListed;  // the counted input token has an entry in the row's list
  __shared__ float countedRaw;    // else its raw logit
  __shared__ sampling::TopScratch topScratch;
  __shared__ sampling::TruncationScratch truncation;
  __shared__ double doubleScratch[32];
  beginDependentWork();

  const int r = blockIdx.x;
  const int V = a.vocabSize;
  float* row = a.logits + static_cast<size_t>(r) * V;
  const int flags = a.rowInts[r * 4 + 3];
  if (flags & kSampleSkip) {
    if (threadIdx.x == 0 && blockIdx.y == 0) {
      a.outTokens[r] = -1;
      a.outLogprobs[r] = NAN;
    }
    return;
  }
  const int adjBegin = a.adjOffsets[r], adjEnd = a.adjOffsets[r + 1];
  const int numTop = min(flags >> kSampleTopShift, kMaxTopLogprobs);
  if ((flags & kSampleGreedy) && !(flags & (kSampleAllowedOnly | kSampleCountInput)) && adjBegin == adjEnd &&
      numTop == 0) {
    return sampleGreedyPlain(a, row, r, floatScratch, intScratch, sumScratch);
  }
  if (blockIdx.y != 0) return;  // the rest of the chain runs in one block a row
  const Sections sec(a);

  // Raw log-sum-exp, before any adjustment.
  float localMax = -INFINITY;
  for (int i = threadIdx.x; i < V; i += kThreads) localMax = fmaxf(localMax, row[i]);
  const float rawMax = blockReduce(localMax, Max(), floatScratch);
  float localSum = 0.f;
  for (int i = threadIdx.x; i < V; i += kThreads) localSum += __expf(row[i] - rawMax);
  const float rawLogSum = logf(blockReduce(localSum, Sum(), floatScratch));
  const bool processed = (flags & kSampleProcessedLogprobs) != 0;
  // Lists the row's alternatives (sampling-top.cuh). Their count and addresses are recomputed in each call rather
  // than held across the chain, which keeps registers free.
  const auto listTop = [&](auto keyOf, auto logprobOf) {
    const size_t at = static_cast<size_t>(r) * kMaxTopLogprobs;
    sampling::selectTop(row, V, min(flags >> kSampleTopShift, kMaxTopLogprobs), keyOf, logprobOf, a.outTopIds + at,
                        a.outTopLogprobs + at, topScratch, intScratch);
  };
  // Logprobs as (l - max) - log Σ: l - (max + log Σ) loses log Σ where max is large (a bias of 1e9). The chosen
  // token's takes the same expression as its entry in the list, so the two are the same value.
  const auto rawLogprob = [rawMax, rawLogSum](float l) { return (l - rawMax) - rawLogSum; };
  // Every finite logit may be listed (raw rows, and greedy rows' processed ones).
  if (numTop > 0 && !processed) listTop(sampling::FiniteKey(), rawLogprob);

  // Sparse adjustments; ids within a row are unique, so threads never touch the same logit. A counted input token
  // (kSampleCountInput) is one more output: the repetition penalty, the frequency penalty once more, and the
  // presence penalty unless the host's outputs had it already; in its entry if it has one, else on its own.
  const float* floats = a.rowFloats + r * kRowFloats;
  const float repetition = floats[3], presence = floats[4], frequency = floats[5];
  const int counted = (flags & kSampleCountInput) ? a.inputTokens[a.sampleRows[r]] : -1;
  // `counted` is the same in every thread of the block: rows that count nothing skip these barriers.
  if (counted >= 0) {
    if (threadIdx.x == 0) countedListed = false;
    __syncthreads();
  }
  for (int e = adjBegin + threadIdx.x; e < adjEnd; e += kThreads) {
    const int id = sec.adjIds[e];
    int entryFlags = sec.adjFlags[e];
    float post = sec.adjPost[e];
    if (id == counted) {
      countedListed = true;
      entryFlags |= kAdjRepetition;
      post -= frequency + ((entryFlags & kAdjInOutput) ? 0.f : presence);
    }
    float v = row[id];
    a.adjSaved[e] = v;
    if (entryFlags & kAdjBanned) {
      v = -INFINITY;
    } else {
      v += sec.adjPre[e];
      if (entryFlags & kAdjRepetition) v = v > 0.f ? v / repetition : v * repetition;
      v += post;
    }
    row[id] = v;
  }
  __syncthreads();
  if (counted >= 0) {
    if (!countedListed && threadIdx.x == 0) {
      float v = row[counted];
      countedRaw = v;
      v = v > 0.f ? v / repetition : v * repetition;
      row[counted] = v - presence - frequency;
    }
    __syncthreads();
  }
  if (flags & kSampleAllowedOnly) {
    const int* allowed = sec.allowedIds + a.allowedOffsets[r];
    const int numAllowed = a.allowedOffsets[r + 1] - a.allowedOffsets[r];
    for (int i = threadIdx.x; i < V; i += kThreads) {
      if (!isAllowed(allowed, numAllowed, i)) row[i] = -INFINITY;
    }
    __syncthreads();
  }

  // Processed max and the argmax (lowest id among equal maxima).
  localMax = -INFINITY;
  for (int i = threadIdx.x; i < V; i += kThreads) localMax = fmaxf(localMax, row[i]);
  const float max = blockReduce(localMax, Max(), floatScratch);
  if (max == -INFINITY) {  // every token masked: nothing to sample
    if (threadIdx.x == 0) {
      a.outTokens[r] = kNothingToSample;
      a.outLogprobs[r] = NAN;
    }
    return;
  }

  int token;
  float logprob;
  // The lowest id among the maxima: the greedy pick, and the one token @ferrum/sampler's top-k 1 keeps.
  const auto firstMax = [&] {
    int localArg = V;
    for (int i = threadIdx.x; i < V; i += kThreads) {
      if (row[i] == max) localArg = min(localArg, i);
    }
    return blockReduce(localArg, MinInt(), intScratch);
  };
  const int topK = a.rowInts[r * 4 + 0];
  if (flags & kSampleGreedy) {
    token = firstMax();
    float sum = 0.f;
    if (processed) {
      for (int i = threadIdx.x; i < V; i += kThreads) sum += __expf(row[i] - max);
      sum = blockReduce(sum, Sum(), floatScratch);
    }
    logprob = processed ? -logf(sum) : 0.f;  // raw is filled in below
    if (numTop > 0 && processed) {
      const float logSum = logf(sum);
      listTop(sampling::FiniteKey(), [max, logSum](float l) { return (l - max) - logSum; });
    }
  } else if (topK == 1) {
    // Top-k 1 with processed logprobs (the planner makes other top-k 1 rows greedy): the first maximum alone, of
    // probability 1, even where other tokens tie with it.
    token = firstMax();
    logprob = 0.f;
    if (numTop > 0 && processed) {
      float* top = a.outTopLogprobs + static_cast<size_t>(r) * kMaxTopLogprobs;
      int* ids = a.outTopIds + static_cast<size_t>(r) * kMaxTopLogprobs;
      for (int k = threadIdx.x; k < numTop; k += kThreads) {
        ids[k] = k == 0 ? token : -1;
        top[k] = k == 0 ? 0.f : NAN;
      }
    }
  } else {
    Row rr{row, V, 1.f / floats[0], max, 0u, 0u, floats[2]};
    const float topP = floats[1];
    const bool cutK = topK > 0 && topK < V, cutP = topP < 1.f;
    const bool listed = (cutK && topK <= kThreads) || (!cutK && cutP)
                            ? sampling::sortedCandidates(row, V, cutK ? topK : sampling::kNucleusCandidates, truncation)
                            : false;
    if (cutK) rr.topKKey = listed ? truncation.keys[topK - 1] : sampling::topKKey(row, V, topK, intScratch);
    if (cutP) {
      float mass = 0.f;
      for (int i = threadIdx.x; i < V; i += kThreads) {
        float w;
        if (rr.kept(row[i], &w)) mass += w;
      }
      const float target = topP * blockReduce(mass, Sum(), floatScratch);
      uint32_t key;
      const bool found = listed && sampling::topPKeyFromCandidates(rr, truncation, target, doubleScratch, &key);
      rr.topPKey = found ? key : sampling::topPKey(rr, target, floatScratch);
    }
    // Inverse CDF in ascending id order: each thread owns one contiguous chunk of the vocabulary.
    const int chunk = (V + kThreads - 1) / kThreads;
    const int lo = min(V, threadIdx.x * chunk), hi = min(V, lo + chunk);
    double local = 0.0;
    int lastPositive = -1;
    for (int i = lo; i < hi; i++) {
      float w;
      if (rr.kept(row[i], &w)) {
        local += w;
        if (w > 0.f) lastPositive = i;
      }
    }
    double prefix, total;
    Scan(scanStorage).ExclusiveSum(local, prefix, total);
    const double target = seededUniform(static_cast<uint32_t>(a.rowInts[r * 4 + 1]),
                                        static_cast<uint32_t>(a.rowInts[r * 4 + 2])) * total;
    if (threadIdx.x == 0) chosen = -1;
    __syncthreads();
    if (local > 0.0 && prefix <= target && target < prefix + local) {
      double cumulative = prefix;
      for (int i = lo; i < hi; i++) {
        float w;
        if (rr.kept(row[i], &w)) {
          cumulative += w;
          if (cumulative > target) {
            chosen = i;
            break;
          }
        }
      }
    }
    __syncthreads();
    token = chosen;
    if (token < 0) token = blockReduce(lastPositive, MaxInt(), intScratch);  // u × total rounded up to total
    const float logTotal = static_cast<float>(log(total));
    logprob = processed ? (row[token] - max) * rr.invTemperature - logTotal : 0.f;
    if (numTop > 0 && processed) {
      // The kept tokens, less those whose weight @ferrum/sampler's double precision rounds to 0 (it drops them).
      const auto keptKey = [rr](float l) {
        float w;
        return rr.kept(l, &w) && (l - rr.max) * rr.invTemperature > kDoubleExpUnderflow ? orderedKey(l) : 0u;
      };
      listTop(keptKey, [rr, logTotal](float l) { return (l - rr.max) * rr.invTemperature - logTotal; });
    }
  }

  // The raw logit of the chosen token: saved by the adjustment pass if it was adjusted.
  if (threadIdx.x == 0) rawChosen = token == counted && !countedListed ? countedRaw : row[token];
  __syncthreads();
  for (int e = adjBegin + threadIdx.x; e < adjEnd; e += kThreads) {
    if (sec.adjIds[e] == token) rawChosen = a.adjSaved[e];
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    a.outTokens[r] = token;
    a.outLogprobs[r] = processed ? logprob : rawLogprob(rawChosen);
  }
}

}  // namespace

void launchSampling(const SamplingArgs& args, cudaStream_t stream) {
  if (args.numRows == 0) return;
  if (args.greedySplits < 1 || args.greedySplits > kMaxGreedySplits) {
    throw NativeError("internal", "sampling: greedySplits " + std::to_string(args.greedySplits) + " out of range");
  }
  launchKernel("samplingKernel", samplingKernel, dim3(args.numRows, args.greedySplits), kThreads, 0, stream, args);
}

// About two blocks a multiprocessor in all: enough slices to spread a few rows' reads over the GPU, no more
// blocks than fit at once when many rows are sampled.
int greedySplitsFor(int rows, int numSms) {
  if (rows <= 0) return 1;
  return std::max(1, std::min(kMaxGreedySplits, 2 * numSms / rows));
}

}  // namespace ferrum
