// The loop of kernels-amx.cc's 2 × 2 block on one thread (ns per chunk of 32 k: two weight tiles, two token tiles,
// four products), with the weights' k small enough for L1, in L2, or streamed through many blocks; then the products
// alone, the tile unit's own rate. Shows where the AMX kernel's time goes (bench/results/cpu-bf16-products-*.md).
//   build: g++ -O2 -std=c++17 -mamx-tile -mamx-bf16 -mavx512f -o amx-block packages/runtime-cpu/bench/amx-block.cc
//   run on a Linux x86-64 CPU with AMX: ./amx-block
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
struct alignas(64) Cfg { uint8_t palette = 1, start = 0, r[14] = {}; uint16_t colsb[16] = {}; uint8_t rows[16] = {}; };
int main() {
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) { std::puts("no amx permission"); return 1; }
  Cfg cfg; for (int i = 0; i < 8; ++i) { cfg.colsb[i] = 64; cfg.rows[i] = 16; }
  _tile_loadconfig(&cfg);
  for (int k : {256, 1024, 3072}) {
    const int chunks = k / 32;
    for (int rowsW : {32, 4096}) {  // weight rows: 32 (one block, stays in cache) or many blocks (streamed)
      std::vector<uint16_t> w(static_cast<size_t>(rowsW) * k, 0x3f80), x(static_cast<size_t>(chunks) * 512 * 2, 0x3f80);
      float out[16][16];
      const int reps = rowsW == 32 ? 2000 : 20;
      auto t0 = std::chrono::steady_clock::now();
      long iters = 0;
      for (int rep = 0; rep < reps; ++rep) {
        for (int n0 = 0; n0 < rowsW; n0 += 32) {
          const uint16_t* wb = w.data() + static_cast<size_t>(n0) * k;
          _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
          for (int c = 0; c < chunks; ++c) {
            _tile_loadd(4, wb + c * 32, k * 2);
            _tile_loadd(6, x.data() + c * 512, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, x.data() + chunks * 512 + c * 512, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, wb + 16 * static_cast<size_t>(k) + c * 32, k * 2);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
            ++iters;
          }
          _tile_stored(0, out, 64);
        }
      }
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      std::printf("k %5d weight rows %5d: %.1f ns per chunk (4 products), %.2f TFLOP/s\n", k, rowsW, ns / iters,
                  iters * 4.0 * 16 * 16 * 32 * 2 / ns / 1e3);
    }
  }
  // The same with only the products (no loads): the tile unit's own rate.
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000000; ++i) { _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7); }
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  std::printf("products only: %.1f ns per 4, %.2f TFLOP/s\n", ns / 1e6, 1e6 * 4.0 * 16 * 16 * 32 * 2 / ns / 1e3);
  _tile_release();
}
