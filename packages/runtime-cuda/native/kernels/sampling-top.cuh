// A sampled row's n most likely tokens (OpenAI's top_logprobs, n <= kMaxTopLogprobs), found by the row's sampling
// block without sorting the vocabulary. Order: larger logit first, the lower id among equal ones (@ferrum/sampler's
// TopNSelector), so both paths list the same tokens.
//   1. Each thread takes the best key among its tokens, and the block the n-th best of those keys, `floor`: the n
//      best threads' keys belong to n distinct tokens, so every token of the list has a key >= floor.
//   2. The tokens at or above floor go to a shared list. On real rows they are n or a few more (a thread holds
//      two of the best only by chance).
//   3. If they overflow the list (many tokens tied at the top), the block finds the exact n-th key by bitwise
//      search instead, lists the fewer than n tokens above it, and fills up with the lowest ids of the tokens at it.
//   4. Each listed token's place is the number of listed tokens that rank before it.
// Steps 1 and 2 (listAtOrAboveFloor) also give sampling-truncation.cuh its candidates.
#pragma once

#include <cmath>
#include <cstdint>

#include "sampling-block.cuh"

namespace ferrum {
namespace sampling {

/** Candidates a row's list holds before step 3 takes over. */
constexpr int kTopCandidates = 256;

struct TopScratch {
  uint32_t keys[kTopCandidates];
  int ids[kTopCandidates];
  int count;  // offered so far, also past kTopCandidates
};

// Appends key (and id, where `ids` is not null) to a shared list where `take` holds, one shared atomic a warp;
// past `capacity` it only counts. Every lane of the warp calls it.
__device__ __forceinline__ void offerCandidate(uint32_t* keys, int* ids, int* count, int capacity, bool take,
                                               uint32_t key, int id) {
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  if (mask == 0) return;
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(mask) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(count, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, leader);
  const int at = base + __popc(mask & ((1u << lane) - 1u));
  if (take && at < capacity) {
    keys[at] = key;
    if (ids != nullptr) ids[at] = id;
  }
}

/**
 * The n-th largest of the threads' `best` keys (0 where fewer than n threads hold one above 0), by bitwise search
 * with one block-wide count a bit. The n best threads' keys belong to n distinct tokens, so at least n tokens
 * have a key at or above it, and the n-th largest key of the row is at least it.
 */
__device__ __forceinline__ uint32_t nthBestOfThreads(uint32_t best, int n) {
  uint32_t floor = 0;
  for (int bit = 31; bit >= 0; bit--) {
    const uint32_t candidate = floor | (1u << bit);
    if (__syncthreads_count(best >= candidate) >= n) floor = candidate;
  }
  return floor;
}

/**
 * Lists in `keys` (and `ids`, where not null) the tokens whose keyOf(logit) is at or above the n-th best of the
 * threads' best keys, or every listable one where fewer than n threads hold one. Returns how many there are; past
 * `capacity` they are counted, not listed. Every thread of the block calls it.
 */
template <typename KeyOf>
__device__ __forceinline__ int listAtOrAboveFloor(const float* row, int vocab, int n, KeyOf keyOf, uint32_t* keys,
                                                  int* ids, int* count, int capacity) {
  uint32_t best = 0;
  for (int i = threadIdx.x; i < vocab; i += kThreads) best = max(best, keyOf(row[i]));
  const uint32_t floor = max(nthBestOfThreads(best, n), 1u);  // 1: keyOf's 0 is never listed
  if (threadIdx.x == 0) *count = 0;
  __syncthreads();
  // Whole warps iterate together (offerCandidate's ballot).
  for (int base = 0; base < vocab; base += kThreads) {
    const int i = base + threadIdx.x;
    const uint32_t key = i < vocab ? keyOf(row[i]) : 0u;
    offerCandidate(keys, ids, count, capacity, key >= floor, key, i);
  }
  __syncthreads();
  return *count;
}

/**
 * Writes the n best tokens of `row` to ids[0..n) and their logprobOf(logit) to logprobs[0..n), -1 ids (and NaN)
 * past the tokens there are. keyOf(logit): orderedKey of a token that may be listed, 0 for one that may not. Every
 * thread of the block calls it; `intScratch` holds 32 ints.
 */
template <typename KeyOf, typename LogprobOf>
__device__ __noinline__ void selectTop(const float* row, int vocab, int n, KeyOf keyOf, LogprobOf logprobOf, int* ids,
                          float* logprobs, TopScratch& s, int* intScratch) {
  if (listAtOrAboveFloor(row, vocab, n, keyOf, s.keys, s.ids, &s.count, kTopCandidates) > kTopCandidates) {
    // The largest key with at least n tokens at or above it (0: fewer than n are listable).
    uint32_t nth = 0;
    for (int bit = 31; bit >= 0; bit--) {
      const uint32_t candidate = nth | (1u << bit);
      int count = 0;
      for (int i = threadIdx.x; i < vocab; i += kThreads) count += keyOf(row[i]) >= candidate;
      if (blockReduce(count, Sum(), intScratch) >= n) nth = candidate;
    }
    __syncthreads();
    if (threadIdx.x == 0) s.count = 0;
    __syncthreads();
    for (int base = 0; base < vocab; base += kThreads) {
      const int i = base + threadIdx.x;
      const uint32_t key = i < vocab ? keyOf(row[i]) : 0u;
      offerCandidate(s.keys, s.ids, &s.count, kTopCandidates, key > nth, key, i);  // fewer than n
    }
    __syncthreads();
    if (nth > 0) {
      // The ties at nth by lowest id: each thread owns one contiguous chunk, ranked by a prefix sum.
      const int above = s.count;
      const int need = n - above;
      const int chunk = (vocab + kThreads - 1) / kThreads;
      const int lo = min(vocab, static_cast<int>(threadIdx.x) * chunk), hi = min(vocab, lo + chunk);
      int ties = 0;
      for (int i = lo; i < hi; i++) ties += keyOf(row[i]) == nth;
      int total = 0;
      int rank = blockExclusiveSum<int>(ties, intScratch, &total);
      for (int i = lo; i < hi && rank < need; i++) {
        if (keyOf(row[i]) == nth) {
          s.keys[above + rank] = nth;
          s.ids[above + rank] = i;
          rank++;
        }
      }
      __syncthreads();
      if (threadIdx.x == 0) s.count = above + min(need, total);
    }
    __syncthreads();
  }
  const int count = min(s.count, kTopCandidates);
  if (static_cast<int>(threadIdx.x) < count) {
    const uint32_t key = s.keys[threadIdx.x];
    const int id = s.ids[threadIdx.x];
    int place = 0;
    for (int j = 0; j < count; j++) place += s.keys[j] > key || (s.keys[j] == key && s.ids[j] < id);
    if (place < n) {
      ids[place] = id;
      logprobs[place] = logprobOf(row[id]);
    }
  }
  for (int k = count + threadIdx.x; k < n; k += kThreads) {
    ids[k] = -1;
    logprobs[k] = NAN;
  }
  __syncthreads();  // the scratch is free again
}

}  // namespace sampling
}  // namespace ferrum
