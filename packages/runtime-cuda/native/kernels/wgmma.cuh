// Hopper's warpgroup MMA (wgmma) as the kernels issue it: shared-memory matrix descriptors of 128-byte-swizzled
// tiles, the fence / commit / wait of asynchronous groups, and the m64nNk16 bf16 instructions with f32 accumulators.
// A tile of 128-byte rows keeps 16-byte chunk c of row r at chunk c ^ (r % 8) of its row (the layout TMA writes
// with CU_TENSOR_MAP_SWIZZLE_128B, and attention's cp.async gathers write by hand).
#pragma once

#include <cstdint>

namespace ferrum {
namespace wgmma {

constexpr uint32_t kAtomBytes = 1024;  // 8 rows × 128 bytes: the swizzle's period, and the stride of 8-row groups

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// A wgmma shared-memory matrix descriptor with 128-byte swizzling: start address, leading-dimension byte offset
// (K-major: unused; MN-major: from one 64-wide panel to the next), stride byte offset (8-row groups).
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leadingBytes) {
  return static_cast<uint64_t>((address & 0x3FFFFu) >> 4) | (static_cast<uint64_t>(leadingBytes >> 4) << 16) |
         (static_cast<uint64_t>(kAtomBytes >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most N of this warpgroup's committed wgmma groups are still running.
template <int N>
__device__ __forceinline__ void wgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void wgmmaWaitAll() { wgmmaWait<0>(); }
// Makes this thread's generic-proxy shared-memory writes (cp.async) visible to the async proxy wgmma reads through.
__device__ __forceinline__ void fenceAsyncProxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// wgmma reads and writes these registers asynchronously: after its wait, each is passed through an empty asm so
// the compiler neither reads an accumulator nor reuses an operand register before the wait.
__device__ __forceinline__ void holdRegister(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void holdRegister(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
template <typename T, int R, int C>
__device__ __forceinline__ void holdRegisters(T (&r)[R][C]) {
#pragma unroll
  for (int i = 0; i < R; i++) {
#pragma unroll
    for (int j = 0; j < C; j++) holdRegister(r[i][j]);
  }
}

// A wgmma's accumulator operands: n-tile t's four registers (rows g and g + 8, columns 2c and 2c + 1), and the
// 8 or 16 n-tiles of an m64n64 or m64n128 result, in the instruction's register order.
#define FERRUM_WGMMA_TILE(d, t) "+f"(d[t][0]), "+f"(d[t][1]), "+f"(d[t][2]), "+f"(d[t][3])
#define FERRUM_WGMMA_N64(d)                                                                                      \
  FERRUM_WGMMA_TILE(d, 0), FERRUM_WGMMA_TILE(d, 1), FERRUM_WGMMA_TILE(d, 2), FERRUM_WGMMA_TILE(d, 3),            \
      FERRUM_WGMMA_TILE(d, 4), FERRUM_WGMMA_TILE(d, 5), FERRUM_WGMMA_TILE(d, 6), FERRUM_WGMMA_TILE(d, 7)
#define FERRUM_WGMMA_N128(d)                                                                                     \
  FERRUM_WGMMA_N64(d), FERRUM_WGMMA_TILE(d, 8), FERRUM_WGMMA_TILE(d, 9), FERRUM_WGMMA_TILE(d, 10),              \
      FERRUM_WGMMA_TILE(d, 11), FERRUM_WGMMA_TILE(d, 12), FERRUM_WGMMA_TILE(d, 13), FERRUM_WGMMA_TILE(d, 14),    \
      FERRUM_WGMMA_TILE(d, 15)

// d (64×64 of the warpgroup, f32) = A·B, or += A·B with `accumulate`: A 64×16 and B 16×64, both K-major in shared
// memory (attention's Q and K, a GEMM's weights and x: the summed dimension contiguous).
__device__ __forceinline__ void wgmmaKMajor(float (&d)[8][4], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : FERRUM_WGMMA_N64(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// d (64×N, f32) += A·B: A 64×16 bf16 in registers (mma.sync m16n8k16 A fragments, a warp's 16 rows each), B 16×N
// MN-major in shared memory (V: dims contiguous); N = 64 or 128, the head dim.
__device__ __forceinline__ void wgmmaRegisterA(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : FERRUM_WGMMA_N64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}
__device__ __forceinline__ void wgmmaRegisterA(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : FERRUM_WGMMA_N128(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace wgmma
}  // namespace ferrum
