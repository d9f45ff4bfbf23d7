// AMX kernels: bf16 weights multiplied on the tile unit. TDPBF16PS multiplies a tile of 16 weight rows × 32 k by a
// tile of 32 k × 16 tokens into 16 × 16 f32 sums (512 products a cycle on Sapphire Rapids, against 32 for AVX-512
// FMAs). The weights are read in place (a weight tile is 16 row pieces of 64 bytes), so only x is repacked, once a
// projection: rounded to bf16 into the pair-interleaved layout the second operand takes (packActivations).
// Compiled with the AVX-512 flags and -mamx-tile -mamx-bf16; only called after cpu-features.cc saw AMX and the
// kernel granted this process the tile state. Every k must be a multiple of 32 (the table's kMultiple, checked at
// load), so no tile reads past a weight row. Other weight dtypes take the AVX-512 f32 kernels.
#include "amx-tiles.h"
#include "simd-avx512.h"

namespace ferrum {
namespace {

constexpr int kTile = 16;                  // weight rows, tokens and k pairs a tile holds
constexpr int kChunk = 32;                 // k elements of a tile row (64 bytes of bf16)
constexpr int kTileElements = kTile * kChunk;  // bf16 elements of a packed activation tile
constexpr int kRowBytes = kChunk * 2;
// Chunks of k ahead whose weight rows a block prefetches while it multiplies (see block).
constexpr int kPrefetchChunks = 8;

int chunksOf(int k) { return (k + kChunk - 1) / kChunk; }
int tokenTilesOf(int numTokens) { return (numTokens + kTile - 1) / kTile; }

size_t packedElements(int numTokens, int k) {
  return static_cast<size_t>(tokenTilesOf(numTokens)) * static_cast<size_t>(chunksOf(k)) * kTileElements;
}

// In place: row r of the result holds word r of every input row (a 16 × 16 transpose of 32-bit words), in four
// rounds of interleaves: words, then pairs of words, then 128-bit lanes twice.
void transpose16(__m512i (&m)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(m[i], m[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(m[i], m[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    for (int j = 0; j < 2; ++j) {
      m[i + j] = _mm512_unpacklo_epi64(t[i + j], t[i + j + 2]);
      m[i + j + 2] = _mm512_unpackhi_epi64(t[i + j], t[i + j + 2]);
    }
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_i32x4(m[i + j], m[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_i32x4(m[i + j], m[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    m[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    m[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
  // The interleaves leave row r at the index whose two low bits are r's swapped.
  for (int r = 0; r < 16; ++r) t[r] = m[(r & ~3) | ((r & 1) << 1) | ((r >> 1) & 1)];
  for (int r = 0; r < 16; ++r) m[r] = t[r];
}

// Packed activations: per 16-token tile, per 32-element chunk of k, one 1 KB tile whose row p holds k pair
// (2p, 2p + 1) of each of the 16 tokens side by side. Element (t, i) sits at
// ((t / 16 × chunks + i / 32) × 16 + i % 32 / 2) × 32 + t % 16 × 2 + i % 2; tokens and k past the ends are zero.
// Ranges start at whole tiles (the table's packTokens): each tile is written whole, by one thread.
void packActivations(const float* x, int ldx, int numTokens, int k, int tokenBegin, int tokenEnd, uint16_t* out) {
  const int chunks = chunksOf(k);
  for (int t0 = tokenBegin; t0 < tokenEnd; t0 += kTile) {
    const int tokens = numTokens - t0 < kTile ? numTokens - t0 : kTile;
    uint16_t* tile = out + static_cast<size_t>(t0 / kTile) * chunks * kTileElements;
    for (int c = 0; c < chunks; ++c) {
      const int i = c * kChunk, valid = k - i < kChunk ? k - i : kChunk;
      const __mmask16 low = static_cast<__mmask16>(valid >= 16 ? 0xffff : (1u << valid) - 1);
      const __mmask16 high =
          static_cast<__mmask16>(valid >= kChunk ? 0xffff : valid <= 16 ? 0 : (1u << (valid - 16)) - 1);
      // Word p of token t's vector is its k pair (2p, 2p + 1); the transpose makes word t of row p.
      __m512i words[kTile];
      for (int t = 0; t < kTile; ++t) {
        if (t >= tokens) {
          words[t] = _mm512_setzero_si512();
          continue;
        }
        const float* row = x + static_cast<size_t>(t0 + t) * ldx + i;
        words[t] = _mm512_inserti64x4(_mm512_castsi256_si512(roundToBf16(_mm512_maskz_loadu_ps(low, row))),
                                      roundToBf16(_mm512_maskz_loadu_ps(high, row + 16)), 1);
      }
      transpose16(words);
      uint16_t* dst = tile + static_cast<size_t>(c) * kTileElements;
      for (int p = 0; p < kTile; ++p) _mm512_storeu_si512(dst + p * kChunk, words[p]);
    }
  }
}

// Tile registers (TileConfig): 0-3 sums (weight tile a, token tile b at 2a + b), 4-5 weights, 6-7 activations. Built
// on first use, which only a CPU with AMX reaches (a static initializer built with AVX-512 would run on any CPU).
const TileConfig* tiles() {
  static const TileConfig config;
  return &config;
}

// y rows of tokens [t0, t0 + tokens) (at most 16), columns [n0, n0 + 16), from a 16 (rows) × 16 (tokens) sum tile.
void storeSums(const float (&sums)[kTile][kTile], float* y, int ldy, int n0, int t0, int tokens, bool accumulate) {
  for (int t = 0; t < tokens; ++t) {
    float* out = y + static_cast<size_t>(t0 + t) * ldy + n0;
    for (int n = 0; n < kTile; ++n) out[n] = accumulate ? out[n] + sums[n][t] : sums[n][t];
  }
}

// NT weight tiles (16 rows each, from w) × TT token tiles (from the packed tile `x`): the whole of k, then the stores.
// Each sum sees the same chunks in the same order whatever NT, TT or the batch, so a row never depends on its batch.
// `prefetch`: the block's weights come from memory (its first pass over them): a tile load waits for the product
// that last used its register, so without prefetches the loads of one chunk after another run at memory latency.
template <int NT, int TT>
void block(const uint16_t* w, int k, const uint16_t* x, int chunks, float* y, int ldy, int n0, int t0, int numTokens,
           bool accumulate, bool prefetch) {
  const size_t stride = static_cast<size_t>(k) * 2;
  const size_t tokenTile = static_cast<size_t>(chunks) * kTileElements;
  _tile_zero(0);
  if (TT == 2) _tile_zero(1);
  if (NT == 2) _tile_zero(2);
  if (NT == 2 && TT == 2) _tile_zero(3);
  for (int c = 0; c < chunks; ++c) {
    if (prefetch && c + kPrefetchChunks < chunks) {
      const uint16_t* ahead = w + (c + kPrefetchChunks) * kChunk;
      for (int r = 0; r < NT * kTile; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + static_cast<size_t>(r) * k), _MM_HINT_T0);
      }
    }
    _tile_loadd(4, w + c * kChunk, stride);
    _tile_loadd(6, x + static_cast<size_t>(c) * kTileElements, kRowBytes);
    _tile_dpbf16ps(0, 4, 6);
    if (TT == 2) {
      _tile_loadd(7, x + tokenTile + static_cast<size_t>(c) * kTileElements, kRowBytes);
      _tile_dpbf16ps(1, 4, 7);
    }
    if (NT == 2) {
      _tile_loadd(5, w + kTile * static_cast<size_t>(k) + c * kChunk, stride);
      _tile_dpbf16ps(2, 5, 6);
      if (TT == 2) _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) float sums[kTile][kTile];
  const int first = numTokens - t0 < kTile ? numTokens - t0 : kTile;
  const int second = numTokens - t0 - kTile < kTile ? numTokens - t0 - kTile : kTile;
  _tile_stored(0, sums, kRowBytes);
  storeSums(sums, y, ldy, n0, t0, first, accumulate);
  if (TT == 2) {
    _tile_stored(1, sums, kRowBytes);
    storeSums(sums, y, ldy, n0, t0 + kTile, second, accumulate);
  }
  if (NT == 2) {
    _tile_stored(2, sums, kRowBytes);
    storeSums(sums, y, ldy, n0 + kTile, t0, first, accumulate);
  }
  if (NT == 2 && TT == 2) {
    _tile_stored(3, sums, kRowBytes);
    storeSums(sums, y, ldy, n0 + kTile, t0 + kTile, second, accumulate);
  }
}

// NT weight tiles at row n0 against every token tile, two at a time.
template <int NT>
void weightTiles(const MatmulArgs& a, int chunks, int n0) {
  const uint16_t* w = static_cast<const uint16_t*>(a.w) + static_cast<size_t>(n0) * a.k;
  const size_t tokenTile = static_cast<size_t>(chunks) * kTileElements;
  const int tiles = tokenTilesOf(a.numTokens);
  int b = 0;
  for (; b + 2 <= tiles; b += 2) {
    block<NT, 2>(w, a.k, a.xPacked + b * tokenTile, chunks, a.y, a.ldy, n0, b * kTile, a.numTokens, a.accumulate, b == 0);
  }
  if (b < tiles) {
    block<NT, 1>(w, a.k, a.xPacked + b * tokenTile, chunks, a.y, a.ldy, n0, b * kTile, a.numTokens, a.accumulate, b == 0);
  }
}

// The rows past the last whole weight tile: one sum a (token, row), k in order, read from the packed activations.
void tailRows(const MatmulArgs& a, int chunks, int rowBegin, int rowEnd) {
  const uint16_t* w = static_cast<const uint16_t*>(a.w);
  for (int n = rowBegin; n < rowEnd; ++n) {
    const uint16_t* row = w + static_cast<size_t>(n) * a.k;
    for (int t = 0; t < a.numTokens; ++t) {
      const uint16_t* tile = a.xPacked + static_cast<size_t>(t / kTile) * chunks * kTileElements + (t % kTile) * 2;
      float sum = 0.f;
      for (int i = 0; i < a.k; ++i) {
        const size_t at = static_cast<size_t>(i / kChunk) * kTileElements + (i % kChunk) / 2 * kChunk + i % 2;
        sum += bf16ToF32(row[i]) * bf16ToF32(tile[at]);
      }
      float* out = a.y + static_cast<size_t>(t) * a.ldy + n;
      *out = a.accumulate ? *out + sum : sum;
    }
  }
}

void bf16Matmul(const MatmulArgs& a, int rowBegin, int rowEnd) {
  const int chunks = chunksOf(a.k);
  // Tile state is per thread: configured for this call, released after it.
  _tile_loadconfig(tiles());
  int n = rowBegin;
  for (; n + 2 * kTile <= rowEnd; n += 2 * kTile) weightTiles<2>(a, chunks, n);
  if (n + kTile <= rowEnd) {
    weightTiles<1>(a, chunks, n);
    n += kTile;
  }
  _tile_release();
  tailRows(a, chunks, n, rowEnd);
}

}  // namespace

const KernelTable* amxKernels() {
  static const KernelTable table =
      kernels::makeBf16Table<V512, &bf16Matmul>("amx", kChunk, kTile, &packedElements, &packActivations);
  return &table;
}

}  // namespace ferrum
