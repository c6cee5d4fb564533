// Packing and blocking for both bf16_gemm() engines (bf16_blocks.h). Built with AVX-512 (the
// transposes vectorise): both engines need it, and nothing here runs without one of them.
#include "backends/cpu/gemm/bf16_blocks.h"

#include <string.h>

namespace remat {
namespace cpu {
namespace {

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
// * kBf16TileElems, its row r holding op(A)(i0 + 16 t + r, k0 + 32 s + e) at e. Rows past mc and k
// past kc are zeros; mc is padded to a multiple of kBf16Block and kc to one of kBf16TileK.
void pack_a(const Bf16Gemm& g, int64_t i0, int64_t mc, int64_t k0, int64_t kc, uint16_t* dst) {
  const int64_t steps = round_up(kc, kBf16TileK) / kBf16TileK;
  const int64_t tiles = round_up(mc, kBf16Block) / kBf16TileRows;
  for (int64_t t = 0; t < tiles; ++t) {
    for (int64_t s = 0; s < steps; ++s) {
      uint16_t* tile = dst + (t * steps + s) * kBf16TileElems;
      const int64_t i = t * kBf16TileRows, k = s * kBf16TileK;
      const int64_t rows = mc - i < kBf16TileRows ? (mc - i > 0 ? mc - i : 0) : kBf16TileRows;
      const int64_t count = kc - k < kBf16TileK ? kc - k : kBf16TileK;
      if (g.trans_a && rows == kBf16TileRows && count == kBf16TileK) {
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
      for (int64_t r = 0; r < kBf16TileRows; ++r) {
        uint16_t* row = tile + r * kBf16TileK;
        const int64_t n = r < rows ? count : 0;
        if (!g.trans_a) {
          if (n > 0) memcpy(row, g.a + (i0 + i + r) * g.lda + k0 + k, n * 2);
        } else {
          const uint16_t* src = g.a + (k0 + k) * g.lda + i0 + i + r;
          for (int64_t e = 0; e < n; ++e) row[e] = src[e * g.lda];
        }
        for (int64_t e = n; e < kBf16TileK; ++e) row[e] = 0;
      }
    }
  }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] into column tiles: tile u, k-step s is at dst + (u * steps +
// s) * kBf16TileElems, its row p holding op(B)(k0 + 32 s + 2 p + e, j0 + 16 u + c) at 2 c + e.
// Columns past nc and k past kc are zeros; nc is padded to a multiple of kBf16Block.
void pack_b(const Bf16Gemm& g, int64_t k0, int64_t kc, int64_t j0, int64_t nc, uint16_t* dst) {
  const int64_t steps = round_up(kc, kBf16TileK) / kBf16TileK;
  const int64_t tiles = round_up(nc, kBf16Block) / kBf16TileRows;
  for (int64_t u = 0; u < tiles; ++u) {
    const int64_t j = j0 + u * kBf16TileRows;
    const int64_t columns = nc - u * kBf16TileRows < kBf16TileRows
                                ? (nc - u * kBf16TileRows > 0 ? nc - u * kBf16TileRows : 0)
                                : kBf16TileRows;
    for (int64_t s = 0; s < steps; ++s) {
      uint16_t* tile = dst + (u * steps + s) * kBf16TileElems;
      uint32_t* words = reinterpret_cast<uint32_t*>(tile);
      const int64_t k = s * kBf16TileK;
      const int64_t count = kc - k < kBf16TileK ? kc - k : kBf16TileK;
      if (g.trans_b && columns == kBf16TileRows && count == kBf16TileK) {
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

}  // namespace

void bf16_blocked_gemm(const Bf16Gemm& g, Bf16BlockKernel kernel) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {
    for (int64_t i = 0; i < g.m; ++i) {
      if (g.beta == 0.0f) memset(g.c + i * g.ldc, 0, static_cast<size_t>(g.n) * sizeof(float));
    }
    return;
  }
  uint16_t* packed_b = reinterpret_cast<uint16_t*>(g.pack);
  uint16_t* packed_a = packed_b + kBf16Kc * kBf16Nc;
  alignas(64) float edge[kBf16Block * kBf16Block];
  for (int64_t j0 = 0; j0 < g.n; j0 += kBf16Nc) {
    const int64_t nc = g.n - j0 < kBf16Nc ? g.n - j0 : kBf16Nc;
    for (int64_t k0 = 0; k0 < g.k; k0 += kBf16Kc) {
      const int64_t kc = g.k - k0 < kBf16Kc ? g.k - k0 : kBf16Kc;
      const int64_t steps = round_up(kc, kBf16TileK) / kBf16TileK;
      // The first block of k starts from zero, or from C where beta is 1.
      const bool load = k0 > 0 || g.beta != 0.0f;
      pack_b(g, k0, kc, j0, nc, packed_b);
      for (int64_t i0 = 0; i0 < g.m; i0 += kBf16Mc) {
        const int64_t mc = g.m - i0 < kBf16Mc ? g.m - i0 : kBf16Mc;
        pack_a(g, i0, mc, k0, kc, packed_a);
        for (int64_t i = 0; i < mc; i += kBf16Block) {
          const uint16_t* a = packed_a + (i / kBf16TileRows) * steps * kBf16TileElems;
          for (int64_t j = 0; j < nc; j += kBf16Block) {
            const uint16_t* b = packed_b + (j / kBf16TileRows) * steps * kBf16TileElems;
            float* c = g.c + (i0 + i) * g.ldc + j0 + j;
            const int64_t rows = mc - i < kBf16Block ? mc - i : kBf16Block;
            const int64_t cols = nc - j < kBf16Block ? nc - j : kBf16Block;
            if (rows == kBf16Block && cols == kBf16Block) {
              kernel(a, b, steps, c, g.ldc, load);
              continue;
            }
            // C's edge: the block through |edge|, only its valid part read and written.
            if (load) {
              for (int64_t r = 0; r < rows; ++r)
                memcpy(edge + r * kBf16Block, c + r * g.ldc, cols * 4);
            }
            kernel(a, b, steps, edge, kBf16Block, load);
            for (int64_t r = 0; r < rows; ++r)
              memcpy(c + r * g.ldc, edge + r * kBf16Block, cols * 4);
          }
        }
      }
    }
  }
  if (g.alpha != 1.0f) {
    for (int64_t i = 0; i < g.m; ++i) {
      float* c = g.c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) c[j] *= g.alpha;
    }
  }
}

}  // namespace cpu
}  // namespace remat
