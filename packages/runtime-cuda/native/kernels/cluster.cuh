// Thread-block cluster primitives (Hopper, sm_90): the cluster-wide barrier, and loads from another block's shared
// memory (distributed shared memory).
#pragma once

#include <cstdint>

namespace ferrum {
namespace cluster {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

/**
 * Every thread of every block of the cluster: the shared-memory writes of each before it are visible to all after
 * it, and no block runs ahead (a block's shared memory must outlive the other blocks' reads of it).
 */
__device__ __forceinline__ void sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/** The address of `address` (this block's shared memory) in the shared memory of the block of rank `r`. */
__device__ __forceinline__ uint32_t mapTo(uint32_t address, uint32_t r) {
  uint32_t mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(mapped) : "r"(address), "r"(r));
  return mapped;
}

__device__ __forceinline__ float2 load2(uint32_t address) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(address) : "memory");
  return v;
}

/** E consecutive floats (E of 2 or 4, at an address aligned to E floats) from a cluster shared-memory address. */
template <int E>
__device__ __forceinline__ void loadFloats(uint32_t address, float (&v)[E]) {
  if constexpr (E == 4) {
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                 : "r"(address)
                 : "memory");
  } else {
    static_assert(E == 2, "2 or 4 floats");
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v[0]), "=f"(v[1]) : "r"(address) : "memory");
  }
}

#endif

}  // namespace cluster
}  // namespace ferrum
