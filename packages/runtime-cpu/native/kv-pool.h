// The KV token pool, [layers][slots][kvHeads * headDim] f32 for K and for V, plus a host tier of the same
// layout used by swapOut/swapIn. On CPU both tiers are ordinary memory; the host tier exists so that the
// KV policy can free pool slots the same way it does on a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "aligned-buffer.h"
#include "thread-pool.h"

namespace ferrum {

class KvPool {
 public:
  KvPool(int numLayers, int numSlots, int numHostSlots, int kvDim);

  int numSlots() const { return numSlots_; }
  int numHostSlots() const { return numHostSlots_; }

  float* key(int layer, int slot) { return keys_.as<float>() + rowOffset(layer, slot, numSlots_); }
  float* value(int layer, int slot) { return values_.as<float>() + rowOffset(layer, slot, numSlots_); }

  /** Empty when `count` slots of `slots` (src/dst of a transfer) all lie in [0, limit); else why not. */
  static std::string checkSlots(const int32_t* slots, int64_t count, int limit, const char* what);

  /** Pool slot src[i] -> pool slot dst[i], every layer, in order of i. Arguments checked by the caller. */
  void copySlots(const int32_t* src, const int32_t* dst, int count, ThreadPool& pool);
  /** Pool slot device[i] -> host slot host[i]. */
  void swapOut(const int32_t* device, const int32_t* host, int count, ThreadPool& pool);
  /** Host slot host[i] -> pool slot device[i]. */
  void swapIn(const int32_t* host, const int32_t* device, int count, ThreadPool& pool);

 private:
  size_t rowOffset(int layer, int slot, int slotsPerLayer) const {
    return (static_cast<size_t>(layer) * static_cast<size_t>(slotsPerLayer) + static_cast<size_t>(slot)) *
           static_cast<size_t>(kvDim_);
  }
  void transfer(float* srcBase, int srcSlotsPerLayer, const int32_t* src, float* dstBase, int dstSlotsPerLayer,
                const int32_t* dst, int count, ThreadPool& pool);

  int numLayers_;
  int numSlots_;
  int numHostSlots_;
  int kvDim_;
  AlignedBuffer keys_, values_, hostKeys_, hostValues_;
};

}  // namespace ferrum
