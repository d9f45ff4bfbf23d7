// N consecutive bf16 (N = 1, 2, 4 or 8) moved as one memory access and unpacked to / packed from f32 in
// registers. bf16 → f32 is exact (a shift); f32 → bf16 rounds to nearest even, as __float2bfloat16 does.
// The pointer must be aligned to N * 2 bytes.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace ferrum {

template <int N>
using Bf16Raw = std::conditional_t<
    N == 8, uint4, std::conditional_t<N == 4, uint2, std::conditional_t<N == 2, uint32_t, unsigned short>>>;

__device__ __forceinline__ float bf16Lo(uint32_t word) { return __uint_as_float(word << 16); }
__device__ __forceinline__ float bf16Hi(uint32_t word) { return __uint_as_float(word & 0xffff0000u); }

__device__ __forceinline__ uint32_t packBf16Pair(float lo, float hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(lo))) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(__float2bfloat16(hi))) << 16);
}

__device__ __forceinline__ void unpackBf16(uint4 r, float (&f)[8]) {
  f[0] = bf16Lo(r.x), f[1] = bf16Hi(r.x), f[2] = bf16Lo(r.y), f[3] = bf16Hi(r.y);
  f[4] = bf16Lo(r.z), f[5] = bf16Hi(r.z), f[6] = bf16Lo(r.w), f[7] = bf16Hi(r.w);
}
__device__ __forceinline__ void unpackBf16(uint2 r, float (&f)[4]) {
  f[0] = bf16Lo(r.x), f[1] = bf16Hi(r.x), f[2] = bf16Lo(r.y), f[3] = bf16Hi(r.y);
}
__device__ __forceinline__ void unpackBf16(uint32_t r, float (&f)[2]) { f[0] = bf16Lo(r), f[1] = bf16Hi(r); }
__device__ __forceinline__ void unpackBf16(unsigned short r, float (&f)[1]) {
  f[0] = bf16Lo(static_cast<uint32_t>(r));
}

__device__ __forceinline__ void packBf16(const float (&f)[8], uint4& r) {
  r = make_uint4(packBf16Pair(f[0], f[1]), packBf16Pair(f[2], f[3]), packBf16Pair(f[4], f[5]),
                 packBf16Pair(f[6], f[7]));
}
__device__ __forceinline__ void packBf16(const float (&f)[4], uint2& r) {
  r = make_uint2(packBf16Pair(f[0], f[1]), packBf16Pair(f[2], f[3]));
}
__device__ __forceinline__ void packBf16(const float (&f)[2], uint32_t& r) { r = packBf16Pair(f[0], f[1]); }
__device__ __forceinline__ void packBf16(const float (&f)[1], unsigned short& r) {
  r = __bfloat16_as_ushort(__float2bfloat16(f[0]));
}

// 16 bytes of constant data read once (a weight vector of a GEMV): not kept in L1, which keeps what is reused.
__device__ __forceinline__ uint4 loadStreaming(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

template <int N>
__device__ __forceinline__ void loadBf16(const __nv_bfloat16* p, float (&f)[N]) {
  unpackBf16(*reinterpret_cast<const Bf16Raw<N>*>(p), f);
}

template <int N>
__device__ __forceinline__ void storeBf16(__nv_bfloat16* p, const float (&f)[N]) {
  Bf16Raw<N> r;
  packBf16(f, r);
  *reinterpret_cast<Bf16Raw<N>*>(p) = r;
}

/** Whether every non-null pointer is aligned to `bytes`. */
inline bool allAligned(size_t bytes, std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
  }
  return true;
}

}  // namespace ferrum
