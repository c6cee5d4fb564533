// bf16_gemm() on Intel's AMX tiles (gemm.h): bfloat16 operands, float32 sums, for the matmul ops
// of 16-bit plans on processors with AMX-BF16 (Sapphire Rapids and later). Built only for x86-64
// with a compiler that takes -mamx-tile -mamx-bf16 (meson defines REMAT_CPU_AMX), and called only
// where bf16_gemm_available() (gemm.cc, built without those flags: it runs on every CPU) says the
// CPU has the tiles and Linux lets the process use them.
//
// Blocking, BLIS-style: op(B) is packed kAmxKc x kAmxNc at a time into tiles of 16 k-pairs x 16
// columns (the pairs interleaved, as TDPBF16PS reads B), op(A) kAmxMc x kAmxKc at a time into
// tiles of 16 rows x 32 k; each 32 x 32 block of C is four accumulator tiles summed over the
// block's k in steps of 32. Between blocks of k the partial sums wait in C (exact float32). So
// each element of C is summed in an order fixed by K alone: a row or column slice of a product
// gives the bits of the whole, and the thread count never changes them. Operands are zero-padded
// to whole tiles; a block of C that C's edge cuts goes through a 32 x 32 buffer.
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/gemm/gemm.h"

namespace remat {
namespace cpu {
namespace {

constexpr int64_t kTileRows = 16;  // rows of every tile
constexpr int64_t kTileK = 32;     // bfloat16 elements of k in one A tile row
constexpr int64_t kBlock = 32;     // rows and columns of C one micro-kernel call computes
constexpr int64_t kTileBytes = 1024;
constexpr int64_t kTileElems = kTileBytes / 2;  // bfloat16 elements of one tile

// The tile configuration LDTILECFG reads (palette 1): every tile 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// |to|[r * 16 + c] = word r of row c of |from| (rows |row_bytes| apart) for a 16 x 16 block of
// 32-bit words: a pair of bfloat16 moves as one word. Plain loops, which the compiler vectorises.
void transpose_words(const void* from, int64_t row_bytes, uint32_t* to) {
  uint32_t block[16][16];
  for (int c = 0; c < 16; ++c) {
    memcpy(block[c], static_cast<const char*>(from) + c * row_bytes, sizeof block[c]);
  }
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 16; ++c) to[r * 16 + c] = block[c][r];
  }
}

// Packs op(A)[i0:i0+mc, k0:k0+kc] into row tiles: tile t, k-step s is at dst + (t * steps + s)
// * kTileElems, its row r holding op(A)(i0 + 16 t + r, k0 + 32 s + e) at e. Rows past mc and k
// past kc are zeros; mc is padded to a multiple of kBlock and kc to one of kTileK.
void pack_a(const Bf16Gemm& g, int64_t i0, int64_t mc, int64_t k0, int64_t kc, uint16_t* dst) {
  const int64_t steps = round_up(kc, kTileK) / kTileK;
  const int64_t tiles = round_up(mc, kBlock) / kTileRows;
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t s = 0; s < steps; ++s) {
      uint16_t* tile = dst + (t * steps + s) * kTileElems;
      const int64_t i = t * kTileRows, k = s * kTileK;
      const int64_t rows = mc - i < kTileRows ? (mc - i > 0 ? mc - i : 0) : kTileRows;
      const int64_t count = kc - k < kTileK ? kc - k : kTileK;
      if (g.trans_a && rows == kTileRows && count == kTileK) {
        // op(A) stored K-major: rows k and k + 1 interleaved into pairs, one word per column,
        // then the 16 x 16 words transposed into the tile's rows.
        uint32_t pairs[16 * 16];
        for (int64_t p = 0; p < 16; ++p) {
          const uint16_t* even = g.a + (k0 + k + 2 * p) * g.lda + i0 + i;
          const uint16_t* odd = even + g.lda;
          for (int64_t c = 0; c < 16; ++c) {
            pairs[p * 16 + c] = static_cast<uint32_t>(even[c]) | static_cast<uint32_t>(odd[c])
                                                                     << 16;
          }
        }
        transpose_words(pairs, sizeof(uint32_t) * 16, reinterpret_cast<uint32_t*>(tile));
        continue;
      }
      for (int64_t r = 0; r < kTileRows; ++r) {
        uint16_t* row = tile + r * kTileK;
        const int64_t n = r < rows ? count : 0;
        if (!g.trans_a) {
          if (n > 0) memcpy(row, g.a + (i0 + i + r) * g.lda + k0 + k, n * 2);
        } else {
          const uint16_t* src = g.a + (k0 + k) * g.lda + i0 + i + r;
          for (int64_t e = 0; e < n; ++e) row[e] = src[e * g.lda];
        }
        for (int64_t e = n; e < kTileK; ++e) row[e] = 0;
      }
    }
  }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] into column tiles: tile u, k-step s is at dst + (u * steps +
// s) * kTileElems, its row p holding op(B)(k0 + 32 s + 2 p + e, j0 + 16 u + c) at 2 c + e.
// Columns past nc and k past kc are zeros; nc is padded to a multiple of kBlock.
void pack_b(const Bf16Gemm& g, int64_t k0, int64_t kc, int64_t j0, int64_t nc, uint16_t* dst) {
  const int64_t steps = round_up(kc, kTileK) / kTileK;
  const int64_t tiles = round_up(nc, kBlock) / kTileRows;
  for (int64_t u = 0; u < tiles; ++u) {
    const int64_t j = j0 + u * kTileRows;
    const int64_t columns = nc - u * kTileRows < kTileRows
                                ? (nc - u * kTileRows > 0 ? nc - u * kTileRows : 0)
                                : kTileRows;
    for (int64_t s = 0; s < steps; ++s) {
      uint16_t* tile = dst + (u * steps + s) * kTileElems;
      uint32_t* words = reinterpret_cast<uint32_t*>(tile);
      const int64_t k = s * kTileK;
      const int64_t count = kc - k < kTileK ? kc - k : kTileK;
      if (g.trans_b && columns == kTileRows && count == kTileK) {
        // op(B) stored N-major: each column's pair of k is one word already; transposed.
        transpose_words(g.b + j * g.ldb + k0 + k, g.ldb * 2, words);
        continue;
      }
      for (int64_t p = 0; p < 16; ++p) {
        uint32_t* row = words + p * 16;
        const int64_t first = 2 * p, second = 2 * p + 1;
        const int64_t n0 = first < count ? columns : 0, n1 = second < count ? columns : 0;
        if (!g.trans_b) {
          // Rows k and k + 1 of op(B) interleaved, one word per column.
          const uint16_t* even = g.b + (k0 + k + first) * g.ldb + j;
          const uint16_t* odd = even + g.ldb;
          int64_t c = 0;
          for (; c < n1; ++c) {
            row[c] = static_cast<uint32_t>(even[c]) | static_cast<uint32_t>(odd[c]) << 16;
          }
          for (; c < n0; ++c) row[c] = even[c];
          for (; c < 16; ++c) row[c] = 0;
        } else {
          const uint16_t* src = g.b + j * g.ldb + k0 + k + first;
          for (int64_t c = 0; c < 16; ++c) {
            const uint32_t lo = c < n0 ? src[c * g.ldb] : 0;
            const uint32_t hi = c < n1 ? src[c * g.ldb + 1] : 0;
            row[c] = lo | hi << 16;
          }
        }
      }
    }
  }
}

// One 32 x 32 block of C from packed tiles: |a| the block's two row tiles' k-steps (a + steps *
// kTileElems is the second), |b| its two column tiles' likewise, |steps| k-steps. Starts from
// |c| (row length |ldc| floats) when |load|, else from zero; writes the sums back to |c|.
void block(const uint16_t* a, const uint16_t* b, int64_t steps, float* c, int64_t ldc, bool load) {
  const int64_t stride = ldc * static_cast<int64_t>(sizeof(float));
  if (load) {
    _tile_loadd(0, c, stride);
    _tile_loadd(1, c + kTileRows, stride);
    _tile_loadd(2, c + kTileRows * ldc, stride);
    _tile_loadd(3, c + kTileRows * ldc + kTileRows, stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const uint16_t* a1 = a + steps * kTileElems;
  const uint16_t* b1 = b + steps * kTileElems;
  for (int64_t s = 0; s < steps; ++s) {
    _tile_loadd(4, a + s * kTileElems, 64);
    _tile_loadd(5, a1 + s * kTileElems, 64);
    _tile_loadd(6, b + s * kTileElems, 64);
    _tile_loadd(7, b1 + s * kTileElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, stride);
  _tile_stored(1, c + kTileRows, stride);
  _tile_stored(2, c + kTileRows * ldc, stride);
  _tile_stored(3, c + kTileRows * ldc + kTileRows, stride);
}

}  // namespace

void bf16_gemm(const Bf16Gemm& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {
    for (int64_t i = 0; i < g.m; ++i) {
      if (g.beta == 0.0f) memset(g.c + i * g.ldc, 0, static_cast<size_t>(g.n) * sizeof(float));
    }
    return;
  }
  TileConfig config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kTileRows;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
  uint16_t* packed_b = reinterpret_cast<uint16_t*>(g.pack);
  uint16_t* packed_a = packed_b + kAmxKc * kAmxNc;
  alignas(64) float edge[kBlock * kBlock];
  for (int64_t j0 = 0; j0 < g.n; j0 += kAmxNc) {
    const int64_t nc = g.n - j0 < kAmxNc ? g.n - j0 : kAmxNc;
    for (int64_t k0 = 0; k0 < g.k; k0 += kAmxKc) {
      const int64_t kc = g.k - k0 < kAmxKc ? g.k - k0 : kAmxKc;
      const int64_t steps = round_up(kc, kTileK) / kTileK;
      // The first block of k starts from zero, or from C where beta is 1.
      const bool load = k0 > 0 || g.beta != 0.0f;
      pack_b(g, k0, kc, j0, nc, packed_b);
      for (int64_t i0 = 0; i0 < g.m; i0 += kAmxMc) {
        const int64_t mc = g.m - i0 < kAmxMc ? g.m - i0 : kAmxMc;
        pack_a(g, i0, mc, k0, kc, packed_a);
        for (int64_t i = 0; i < mc; i += kBlock) {
          const uint16_t* a = packed_a + (i / kTileRows) * steps * kTileElems;
          for (int64_t j = 0; j < nc; j += kBlock) {
            const uint16_t* b = packed_b + (j / kTileRows) * steps * kTileElems;
            float* c = g.c + (i0 + i) * g.ldc + j0 + j;
            const int64_t rows = mc - i < kBlock ? mc - i : kBlock;
            const int64_t cols = nc - j < kBlock ? nc - j : kBlock;
            if (rows == kBlock && cols == kBlock) {
              block(a, b, steps, c, g.ldc, load);
              continue;
            }
            // C's edge: the block through |edge|, only its valid part read and written.
            if (load) {
              for (int64_t r = 0; r < rows; ++r) memcpy(edge + r * kBlock, c + r * g.ldc, cols * 4);
            }
            block(a, b, steps, edge, kBlock, load);
            for (int64_t r = 0; r < rows; ++r) memcpy(c + r * g.ldc, edge + r * kBlock, cols * 4);
          }
        }
      }
    }
  }
  _tile_release();
  if (g.alpha != 1.0f) {
    for (int64_t i = 0; i < g.m; ++i) {
      float* c = g.c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) c[j] *= g.alpha;
    }
  }
}

}  // namespace cpu
}  // namespace remat
