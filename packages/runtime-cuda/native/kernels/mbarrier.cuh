// Shared-memory mbarriers (Hopper) as the producer-consumer kernels use them: a phase completes when its expected
// arrivals, and the bytes of the asynchronous copies bound to it, have all come in; waiters poll a phase's parity.
// Also the copies that complete on them: cp.async's arrive-on-completion and TMA tile loads.
#pragma once

#include <cstdint>

namespace ferrum {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void barrierInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void barrierArrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives, without raising the count the phase expects, once this thread's earlier cp.async copies have landed.
__device__ __forceinline__ void barrierArriveOnCopies(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Until the phase of this parity has completed.
__device__ __forceinline__ void barrierWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nwaiting:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra waiting;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Arrives once, and adds `bytes` to what the current phase waits for (the asynchronous copies bound to it).
__device__ __forceinline__ void barrierArriveExpecting(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Makes the initialized barriers visible to the async proxy (TMA) and the rest of the cluster; before a block barrier.
__device__ __forceinline__ void barrierInitFence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// A TMA load of the tile of `map` at (c0 innermost, c1) into shared memory at `dst`, completing on `bar`; `policy`
// is an L2 cache policy (createpolicy).
__device__ __forceinline__ void tmaLoadTile(uint32_t dst, const void* map, uint32_t bar, int c0, int c1,
                                            uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, "
      "%3}], [%4], %5;\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
      : "memory");
}
// Fetches a tensor map (a __grid_constant__ kernel parameter) ahead of its first TMA load.
__device__ __forceinline__ void prefetchTensorMap(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace ferrum
