// A sampled row's truncation (sampling.cu): the keys (orderedKey) of the smallest logits top-k and top-p keep.
//   - top-k: the k-th largest key among finite logits (ties kept);
//   - top-p: the largest key k whose kept mass at or above it reaches topP × the kept mass (a token is kept iff the
//     kept mass of strictly larger logits is below that).
// Fast path: the tokens at or above the n-th best of the threads' best keys (sampling-top.cuh) go to a shared list
// (two passes over the row), sorted by key (bitonic), which gives the k-th key by its place and the top-p key by a
// prefix sum of the weights in key order. n is k for top-k up to kThreads, else kNucleusCandidates for top-p, whose
// nucleus lies among them where their mass reaches the target (on most rows of trained models).
// Otherwise a bitwise search over the row, a pass a bit: 32 passes, those of top-p with exp() of every kept logit.
// On the H100 (dummy Qwen3-4B, c1) the search decoded at 286 tok/s with top-k 40 and 249 with top-k 40 and top-p
// 0.9, against 310 with temperature alone; the list reads 304 and 303
// (bench/results/cuda-top-logprobs-2026-11-22-pass18.md). (Testing the key against the candidate before exp() in
// the search's passes read slower: 217 against 249 tok/s with top-p 0.95 alone.)
#pragma once

#include <cmath>
#include <cstdint>

#include "sampling-block.cuh"
#include "sampling-top.cuh"

namespace ferrum {
namespace sampling {

/** Candidates a top-p-only row lists (the nucleus must lie among about this many best tokens for the fast path). */
constexpr int kNucleusCandidates = 256;

/** What the kept set of a sampled row depends on, and whether a logit is in it (and its weight). */
struct Row {
  float* logits;
  int vocab;
  float invTemperature;
  float max;
  uint32_t topKKey;
  uint32_t topPKey;
  float minP;
  __device__ bool kept(float l, float* weight) const {
    if (!(l > -INFINITY)) return false;
    const uint32_t key = orderedKey(l);
    if (key < topKKey || key < topPKey) return false;
    *weight = expf((l - max) * invTemperature);
    return *weight >= minP;
  }
};

/** The candidate list: keys sorted in descending order, 0 past `count`. */
struct TruncationScratch {
  uint32_t keys[kThreads];
  int count;
  uint32_t found;
};

/**
 * Lists the finite logits' keys at or above the n-th best thread's best key and sorts them (descending, 0-padded).
 * False, with nothing sorted, where they are more than kThreads. Every thread of the block calls it.
 */
__device__ bool sortedCandidates(const float* row, int vocab, int n, TruncationScratch& s) {
  const int count = listAtOrAboveFloor(row, vocab, n, FiniteKey(), s.keys, nullptr, &s.count, kThreads);
  if (count > kThreads) return false;
  if (static_cast<int>(threadIdx.x) >= count) s.keys[threadIdx.x] = 0u;
  for (int size = 2; size <= kThreads; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      const int i = threadIdx.x, partner = i ^ stride;
      if (partner > i) {
        const uint32_t a = s.keys[i], b = s.keys[partner];
        if ((i & size) == 0 ? a < b : a > b) {  // descending runs where (i & size) is 0: the whole list at the end
          s.keys[i] = b;
          s.keys[partner] = a;
        }
      }
    }
  }
  __syncthreads();
  return true;
}

/**
 * The top-p key from the sorted candidates, where their kept mass reaches `target` (then the nucleus lies among
 * them); false otherwise. Every thread of the block calls it; `scratch` holds 32 doubles.
 */
__device__ bool topPKeyFromCandidates(const Row& r, TruncationScratch& s, float target, double* scratch,
                                      uint32_t* result) {
  const uint32_t key = s.keys[threadIdx.x];
  float w = 0.f;
  if (key == 0u || !r.kept(keyValue(key), &w)) w = 0.f;
  double total;
  const double before = blockExclusiveSum<double>(w, scratch, &total);
  if (total < target) return false;
  // The first candidate whose running mass reaches the target: its key is the smallest kept.
  if (before < target && before + w >= target) s.found = key;
  __syncthreads();
  *result = s.found;
  return true;
}

/** The k-th largest key among finite logits (count(key >= result) >= k, maximal), a pass a bit. */
__device__ uint32_t topKKey(const float* row, int vocab, int k, int* intScratch) {
  uint32_t tau = 0;
  for (int bit = 31; bit >= 0; bit--) {
    const uint32_t candidate = tau | (1u << bit);
    int count = 0;
    for (int i = threadIdx.x; i < vocab; i += kThreads) count += (row[i] > -INFINITY && orderedKey(row[i]) >= candidate);
    if (blockReduce(count, Sum(), intScratch) >= k) tau = candidate;
  }
  return tau;
}

/** Smallest key to keep for top-p: largest tau whose strictly-larger kept mass is >= target, plus one; a pass a bit. */
__device__ uint32_t topPKey(const Row& r, float target, float* floatScratch) {
  uint32_t tau = 0;
  for (int bit = 31; bit >= 0; bit--) {
    const uint32_t candidate = tau | (1u << bit);
    float mass = 0.f;
    for (int i = threadIdx.x; i < r.vocab; i += kThreads) {
      float w;
      if (r.kept(r.logits[i], &w) && orderedKey(r.logits[i]) > candidate) mass += w;
    }
    if (blockReduce(mass, Sum(), floatScratch) >= target) tau = candidate;
  }
  return tau + 1;
}

}  // namespace sampling
}  // namespace ferrum
