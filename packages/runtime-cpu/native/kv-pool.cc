#include "kv-pool.h"

#include <cstring>

namespace ferrum {

KvPool::KvPool(int numLayers, int numSlots, int numHostSlots, int kvDim)
    : numLayers_(numLayers), numSlots_(numSlots), numHostSlots_(numHostSlots), kvDim_(kvDim) {
  const size_t rowBytes = sizeof(float) * static_cast<size_t>(kvDim) * static_cast<size_t>(numLayers);
  keys_ = AlignedBuffer(rowBytes * static_cast<size_t>(numSlots), "the KV pool");
  values_ = AlignedBuffer(rowBytes * static_cast<size_t>(numSlots), "the KV pool");
  hostKeys_ = AlignedBuffer(rowBytes * static_cast<size_t>(numHostSlots), "the KV host tier");
  hostValues_ = AlignedBuffer(rowBytes * static_cast<size_t>(numHostSlots), "the KV host tier");
}

std::string KvPool::checkSlots(const int32_t* slots, int64_t count, int limit, const char* what) {
  for (int64_t i = 0; i < count; ++i) {
    if (slots[i] < 0 || slots[i] >= limit) {
      return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(slots[i]) + " is outside [0, " +
             std::to_string(limit) + ")";
    }
  }
  return "";
}

void KvPool::copySlots(const int32_t* src, const int32_t* dst, int count, ThreadPool& pool) {
  transfer(keys_.as<float>(), numSlots_, src, keys_.as<float>(), numSlots_, dst, count, pool);
  transfer(values_.as<float>(), numSlots_, src, values_.as<float>(), numSlots_, dst, count, pool);
}

void KvPool::swapOut(const int32_t* device, const int32_t* host, int count, ThreadPool& pool) {
  transfer(keys_.as<float>(), numSlots_, device, hostKeys_.as<float>(), numHostSlots_, host, count, pool);
  transfer(values_.as<float>(), numSlots_, device, hostValues_.as<float>(), numHostSlots_, host, count, pool);
}

void KvPool::swapIn(const int32_t* host, const int32_t* device, int count, ThreadPool& pool) {
  transfer(hostKeys_.as<float>(), numHostSlots_, host, keys_.as<float>(), numSlots_, device, count, pool);
  transfer(hostValues_.as<float>(), numHostSlots_, host, values_.as<float>(), numSlots_, device, count, pool);
}

// Layers are independent, so they run in parallel; within a layer copies keep the caller's order, which
// gives chained copies (a -> b, then b -> c) their sequential meaning.
void KvPool::transfer(float* srcBase, int srcSlotsPerLayer, const int32_t* src, float* dstBase, int dstSlotsPerLayer,
                      const int32_t* dst, int count, ThreadPool& pool) {
  const size_t rowBytes = sizeof(float) * static_cast<size_t>(kvDim_);
  pool.parallelFor(numLayers_, [&](int64_t begin, int64_t end, int) {
    for (int64_t layer = begin; layer < end; ++layer) {
      for (int i = 0; i < count; ++i) {
        std::memmove(dstBase + rowOffset(static_cast<int>(layer), dst[i], dstSlotsPerLayer),
                     srcBase + rowOffset(static_cast<int>(layer), src[i], srcSlotsPerLayer), rowBytes);
      }
    }
  });
}

}  // namespace ferrum
