// The loop of kernels-amx.cc's 2 × 2 block on one thread (ns per chunk of 32 k: two weight tiles, two token tiles,
// four products), with the weights' k small enough for L1, in L2, or streamed through many blocks; then the products
// alone, the tile unit's own rate. Shows where the AMX kernel's time goes (bench/results/cpu-bf16-products-*.md).
//   build: g++ -O2 -std=c++17 -mamx-tile -mamx-bf16 -mavx512f -o amx-block packages/runtime-cpu/bench/amx-block.cc
//   run on a Linux x86-64 CPU with AMX: ./amx-block
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../native/amx-tiles.h"

namespace {

constexpr double kFlopsPerChunk = 4.0 * 16 * 16 * 32 * 2;  // four 16 × 16 × 32 products

double nsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

// ns a chunk of the block loop over `weightRows` rows of k (32 at a time), against two token tiles of k.
double blockLoop(int k, int weightRows) {
  const int chunks = k / 32;
  const std::vector<uint16_t> w(static_cast<size_t>(weightRows) * k, 0x3f80);  // bf16 1.0
  const std::vector<uint16_t> x(static_cast<size_t>(chunks) * 512 * 2, 0x3f80);
  alignas(64) float sums[16][16];
  const int repeats = weightRows == 32 ? 2000 : 20;
  long iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int repeat = 0; repeat < repeats; ++repeat) {
    for (int n0 = 0; n0 < weightRows; n0 += 32) {
      const uint16_t* block = w.data() + static_cast<size_t>(n0) * k;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int c = 0; c < chunks; ++c) {
        _tile_loadd(4, block + c * 32, k * 2);
        _tile_loadd(6, x.data() + c * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, x.data() + static_cast<size_t>(chunks + c) * 512, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, block + 16 * static_cast<size_t>(k) + c * 32, k * 2);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        ++iterations;
      }
      _tile_stored(0, sums, 64);
    }
  }
  return nsSince(start) / static_cast<double>(iterations);
}

}  // namespace

int main() {
  if (!ferrum::requestAmxTileState()) {
    std::puts("the kernel did not grant the AMX tile state");
    return 1;
  }
  const ferrum::TileConfig config;
  _tile_loadconfig(&config);
  for (int k : {256, 1024, 3072}) {
    for (int weightRows : {32, 4096}) {
      const double ns = blockLoop(k, weightRows);
      std::printf("k %5d, %4d weight rows: %6.1f ns a chunk, %.2f TFLOP/s\n", k, weightRows, ns,
                  kFlopsPerChunk / ns / 1e3);
    }
  }
  constexpr int kRounds = 1000000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  const double ns = nsSince(start) / kRounds;
  std::printf("products alone: %.1f ns a chunk, %.2f TFLOP/s\n", ns, kFlopsPerChunk / ns / 1e3);
  _tile_release();
  return 0;
}
