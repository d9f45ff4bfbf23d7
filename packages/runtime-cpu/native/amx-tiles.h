// AMX's tile state: the process's request for it, and the one tile configuration the kernels load. Plain C++ (no
// ISA flags needed), shared by cpu-features.cc, kernels-amx.cc and bench/amx-block.cc. In an anonymous namespace, as
// everything a translation unit with ISA flags includes: no copy built with AVX-512 can be linked into baseline code.
#pragma once

#include <cstdint>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ferrum {
namespace {

/**
 * Asks Linux for the 8 KB of tile state (arch_prctl ARCH_REQ_XCOMP_PERM, 5.16 and later), which it hands out only to
 * processes that ask: a thread touching the tiles without it is killed. True when granted.
 */
inline bool requestAmxTileState() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
  constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
  return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
#else
  return false;
#endif
}

/** LDTILECFG's operand: palette 1, tiles 0-7 of 16 rows × 64 bytes. */
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  TileConfig() {
    for (int i = 0; i < 8; ++i) {
      colsb[i] = 64;
      rows[i] = 16;
    }
  }
};

}  // namespace
}  // namespace ferrum
