// The tiles of Winograd's F(2x2, 3x3) (conv/winograd.h), compiled once per instruction set
// (isa/build.h): kWinogradTiles tiles at a time, their input transformed into the thread's
// scratch (one 16-float vector a tile and channel), multiplied by the transformed filters lane
// by lane with a register-blocked kernel, and transformed back into y. A vector of 16 floats is
// one AVX-512 register, two AVX ones or four SSE ones; the compiler splits it.
#include <string.h>

#include "backends/cpu/conv/winograd.h"
#include "backends/cpu/isa/build.h"

namespace remat {
namespace cpu {
namespace {

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));
static_assert(sizeof(v16) == kWinogradPositions * sizeof(float), "a tile's positions are one v16");

// The micro-tile: kRows output channels by kTileCols tiles, its accumulators in registers.
#if defined(__AVX512F__)
constexpr int64_t kRows = 4, kTileCols = 6;  // 24 of 32 registers
#elif defined(__AVX__)
constexpr int64_t kRows = 2, kTileCols = 2;  // 8 of 16
#else
constexpr int64_t kRows = 1, kTileCols = 2;  // 8 of 16
#endif
static_assert(kWinogradTiles % kTileCols == 0 && 4 % kRows == 0,
              "blocks and kpad hold whole micro-tiles");

inline v16 load16(const float* p) {
  v16 v;
  memcpy(&v, p, sizeof(v));
  return v;
}

inline void store16(float* p, v16 v) { memcpy(p, &v, sizeof(v)); }

// The 4x4 block at p, rows |stride| floats apart, as one vector, row after row.
inline v16 load_block(const float* p, int64_t stride) {
  v4 r0, r1, r2, r3;
  memcpy(&r0, p, sizeof(r0));
  memcpy(&r1, p + stride, sizeof(r1));
  memcpy(&r2, p + 2 * stride, sizeof(r2));
  memcpy(&r3, p + 3 * stride, sizeof(r3));
  const v8 top = __builtin_shufflevector(r0, r1, 0, 1, 2, 3, 4, 5, 6, 7);
  const v8 bottom = __builtin_shufflevector(r2, r3, 0, 1, 2, 3, 4, 5, 6, 7);
  return __builtin_shufflevector(top, bottom, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// B^T d B: the rows d0 - d2, d1 + d2, d2 - d1, d1 - d3, then the same of each row's columns.
// Each output is one addition or subtraction of two (a sign times a value is exact).
inline v16 transform_block(v16 d) {
  const v16 row_signs = {-1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1};
  const v16 rows_a =
      __builtin_shufflevector(d, d, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 4, 5, 6, 7);
  const v16 rows_b =
      __builtin_shufflevector(d, d, 8, 9, 10, 11, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  const v16 r = rows_a + row_signs * rows_b;
  const v16 col_signs = {-1, 1, -1, -1, -1, 1, -1, -1, -1, 1, -1, -1, -1, 1, -1, -1};
  const v16 cols_a =
      __builtin_shufflevector(r, r, 0, 1, 2, 1, 4, 5, 6, 5, 8, 9, 10, 9, 12, 13, 14, 13);
  const v16 cols_b =
      __builtin_shufflevector(r, r, 2, 2, 1, 3, 6, 6, 5, 7, 10, 10, 9, 11, 14, 14, 13, 15);
  return cols_a + col_signs * cols_b;
}

// A^T m A, the tile's outputs (y00, y01, y10, y11): the rows m0 + m1 + m2 and m1 - m2 - m3,
// then the same of each row's columns, summed left to right.
inline v4 untransform_block(v16 m) {
  const v8 signs = {1, 1, 1, 1, -1, -1, -1, -1};
  const v8 first = __builtin_shufflevector(m, m, 0, 1, 2, 3, 4, 5, 6, 7);
  const v8 second = __builtin_shufflevector(m, m, 4, 5, 6, 7, 8, 9, 10, 11);
  const v8 third = __builtin_shufflevector(m, m, 8, 9, 10, 11, 12, 13, 14, 15);
  const v8 r = (first + signs * second) + signs * third;
  const v4 col_signs = {1, -1, 1, -1};
  const v4 a = __builtin_shufflevector(r, r, 0, 1, 4, 5);
  const v4 b = __builtin_shufflevector(r, r, 1, 2, 5, 6);
  const v4 c = __builtin_shufflevector(r, r, 2, 3, 6, 7);
  return (a + col_signs * b) + col_signs * c;
}

// Tile t's image n, tile row ty and tile column tx, stepped to the next tile without dividing.
struct TileWalk {
  int64_t tile_cols, per_image, n, ty, tx;
  TileWalk(const WinogradConv& wc, int64_t t)
      : tile_cols((wc.q + 1) / 2),
        per_image((wc.p + 1) / 2 * tile_cols),
        n(t / per_image),
        ty(t % per_image / tile_cols),
        tx(t % tile_cols) {}
  void step() {
    if (++tx < tile_cols) return;
    tx = 0;
    if (++ty * tile_cols < per_image) return;
    ty = 0;
    ++n;
  }
};

// Writes B^T d B of tiles [first, first + count) to v [count, c, 16]: for each image's tiles
// and channel, the input rows they read are copied zero-padded into |rows| (the image's column
// j - pad_w at column j), so that every tile reads a whole 4x4 block.
void transform_input(const WinogradConv& wc, const float* x, int64_t first, int64_t count, float* v,
                     float* rows) {
  const int64_t tile_cols = (wc.q + 1) / 2, per_image = (wc.p + 1) / 2 * tile_cols;
  const int64_t cols = 2 * tile_cols + 2;
  int64_t lo = wc.pad_w < 0 ? 0 : wc.pad_w, hi = wc.w + wc.pad_w;  // columns inside the image
  if (lo > cols) lo = cols;
  if (hi > cols) hi = cols;
  if (hi < lo) hi = lo;
  for (int64_t done = 0; done < count;) {
    const int64_t t = first + done, n = t / per_image, in_image = t % per_image;
    const int64_t segment =
        per_image - in_image < count - done ? per_image - in_image : count - done;
    const int64_t ty0 = in_image / tile_cols, ty1 = (in_image + segment - 1) / tile_cols;
    const int64_t row_count = 2 * (ty1 - ty0) + 4, row0 = 2 * ty0 - wc.pad_h;
    for (int64_t ci = 0; ci < wc.c; ++ci) {
      const float* plane = x + (n * wc.c + ci) * wc.h * wc.w;
      for (int64_t r = 0; r < row_count; ++r) {
        float* dst = rows + r * cols;
        const int64_t ih = row0 + r;
        if (ih < 0 || ih >= wc.h) {
          for (int64_t j = 0; j < cols; ++j) dst[j] = 0.0f;
          continue;
        }
        const float* src = plane + ih * wc.w;
        for (int64_t j = 0; j < lo; ++j) dst[j] = 0.0f;
        for (int64_t j = lo; j < hi; ++j) dst[j] = src[j - wc.pad_w];
        for (int64_t j = hi; j < cols; ++j) dst[j] = 0.0f;
      }
      int64_t ty = ty0, tx = in_image % tile_cols;
      for (int64_t i = 0; i < segment; ++i) {
        const v16 d = load_block(rows + 2 * (ty - ty0) * cols + 2 * tx, cols);
        store16(v + ((done + i) * wc.c + ci) * kWinogradPositions, transform_block(d));
        if (++tx == tile_cols) {
          tx = 0;
          ++ty;
        }
      }
    }
    done += segment;
  }
}

// m [tiles, kpad, 16] = the lane-wise products u [c, kpad, 16] times v [tiles, c, 16] summed
// over the channels in order, |tiles| a multiple of kTileCols.
void multiply(const WinogradConv& wc, const float* u, const float* v, int64_t tiles, float* m) {
  for (int64_t t0 = 0; t0 < tiles; t0 += kTileCols) {
    const float* v_tiles = v + t0 * wc.c * kWinogradPositions;
    for (int64_t k0 = 0; k0 < wc.kpad; k0 += kRows) {
      v16 acc[kRows][kTileCols];
      for (int64_t i = 0; i < kRows; ++i) {
        for (int64_t j = 0; j < kTileCols; ++j) acc[i][j] = v16{};
      }
      for (int64_t ci = 0; ci < wc.c; ++ci) {
        v16 a[kRows];
        for (int64_t i = 0; i < kRows; ++i)
          a[i] = load16(u + (ci * wc.kpad + k0 + i) * kWinogradPositions);
        for (int64_t j = 0; j < kTileCols; ++j) {
          const v16 b = load16(v_tiles + (j * wc.c + ci) * kWinogradPositions);
          for (int64_t i = 0; i < kRows; ++i) acc[i][j] += a[i] * b;
        }
      }
      for (int64_t i = 0; i < kRows; ++i) {
        for (int64_t j = 0; j < kTileCols; ++j) {
          store16(m + ((t0 + j) * wc.kpad + k0 + i) * kWinogradPositions, acc[i][j]);
        }
      }
    }
  }
}

// Writes A^T m A of tiles [first, first + count) to their outputs in y, those inside P x Q.
void transform_output(const WinogradConv& wc, const float* m, int64_t first, int64_t count,
                      float* y) {
  const int64_t pq = wc.p * wc.q;
  TileWalk at(wc, first);
  for (int64_t i = 0; i < count; ++i, at.step()) {
    const int64_t oh = 2 * at.ty, ow = 2 * at.tx;
    const bool right = ow + 1 < wc.q, below = oh + 1 < wc.p;
    float* out = y + at.n * wc.k * pq + oh * wc.q + ow;
    const float* tile = m + i * wc.kpad * kWinogradPositions;
    for (int64_t k = 0; k < wc.k; ++k) {
      const v4 r = untransform_block(load16(tile + k * kWinogradPositions));
      float* o = out + k * pq;
      if (right && below) {
        const float top[2] = {r[0], r[1]}, bottom[2] = {r[2], r[3]};
        memcpy(o, top, sizeof(top));
        memcpy(o + wc.q, bottom, sizeof(bottom));
        continue;
      }
      o[0] = r[0];
      if (right) o[1] = r[1];
      if (below) {
        o[wc.q] = r[2];
        if (right) o[wc.q + 1] = r[3];
      }
    }
  }
}

// A dy A^T of a tile's 2x2 gradient (d00, d01, d10, d11): the rows d0, d0 + d1, d0 - d1, -d1,
// then the same of each row's columns.
inline v16 spread_block(v4 d) {
  const v4 zero = {0, 0, 0, 0};
  const v8 row_signs = {1, 1, 1, 1, -1, -1, -1, -1};
  const v8 rows_a = __builtin_shufflevector(d, zero, 0, 1, 0, 1, 0, 1, 4, 4);
  const v8 rows_b = __builtin_shufflevector(d, zero, 4, 4, 2, 3, 2, 3, 2, 3);
  const v8 r = rows_a + row_signs * rows_b;
  const v8 zeros = {0, 0, 0, 0, 0, 0, 0, 0};
  const v16 col_signs = {1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1};
  const v16 cols_a =
      __builtin_shufflevector(r, zeros, 0, 0, 0, 8, 2, 2, 2, 8, 4, 4, 4, 8, 6, 6, 6, 8);
  const v16 cols_b =
      __builtin_shufflevector(r, zeros, 8, 1, 1, 1, 8, 3, 3, 3, 8, 5, 5, 5, 8, 7, 7, 7);
  return cols_a + col_signs * cols_b;
}

// Writes A dy A^T of tiles [first, first + count), every output channel, to g [count, kpad, 16]:
// zero past k.
void transform_gradient(const WinogradConv& wc, const float* dy, int64_t first, int64_t count,
                        float* g) {
  const int64_t pq = wc.p * wc.q;
  TileWalk at(wc, first);
  for (int64_t i = 0; i < count; ++i, at.step()) {
    const int64_t oh = 2 * at.ty, ow = 2 * at.tx;
    const bool right = ow + 1 < wc.q, below = oh + 1 < wc.p;
    const float* in = dy + at.n * wc.k * pq + oh * wc.q + ow;
    float* out = g + i * wc.kpad * kWinogradPositions;
    for (int64_t k = 0; k < wc.kpad; ++k) {
      v4 d = {0, 0, 0, 0};
      if (k < wc.k) {
        const float* o = in + k * pq;
        d[0] = o[0];
        if (right) d[1] = o[1];
        if (below) {
          d[2] = o[wc.q];
          if (right) d[3] = o[wc.q + 1];
        }
      }
      store16(out + k * kWinogradPositions, spread_block(d));
    }
  }
}

// du [rows, c, 16] (+)= the lane-wise sums over the block's |count| tiles of g [count, rows, 16]
// times v [count, c, 16], kCols input channels from |c0| on, rows [r0, r0 + kRows).
template <int64_t kCols>
void sum_tiles(const WinogradConv& wc, const float* g, const float* v, int64_t count, int64_t rows,
               int64_t r0, int64_t c0, bool overwrite, float* du) {
  v16 acc[kRows][kCols];
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) acc[i][j] = v16{};
  }
  for (int64_t t = 0; t < count; ++t) {
    v16 a[kRows];
    for (int64_t i = 0; i < kRows; ++i) a[i] = load16(g + (t * rows + r0 + i) * kWinogradPositions);
    for (int64_t j = 0; j < kCols; ++j) {
      const v16 b = load16(v + (t * wc.c + c0 + j) * kWinogradPositions);
      for (int64_t i = 0; i < kRows; ++i) acc[i][j] += a[i] * b;
    }
  }
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      float* out = du + ((r0 + i) * wc.c + c0 + j) * kWinogradPositions;
      store16(out, overwrite ? acc[i][j] : load16(out) + acc[i][j]);
    }
  }
}

// sum_tiles for the input channels [c0, c) left, fewer than kTileCols: one micro-tile as wide.
template <int64_t kCols = kTileCols - 1>
void sum_last_columns(const WinogradConv& wc, const float* g, const float* v, int64_t count,
                      int64_t rows, int64_t r0, int64_t c0, bool overwrite, float* du) {
  if constexpr (kCols > 0) {
    if (wc.c - c0 == kCols) return sum_tiles<kCols>(wc, g, v, count, rows, r0, c0, overwrite, du);
    sum_last_columns<kCols - 1>(wc, g, v, count, rows, r0, c0, overwrite, du);
  }
}

}  // namespace

void REMAT_CPU_ENTRY(winograd_tiles)(const WinogradConv& wc, const float* x, const float* u,
                                     int64_t t0, int64_t t1, float* scratch, float* y) {
  float* v = scratch;
  float* m = scratch + wc.m_at;
  float* rows = scratch + wc.rows_at;
  for (int64_t first = t0; first < t1; first += kWinogradTiles) {
    const int64_t count = t1 - first < kWinogradTiles ? t1 - first : kWinogradTiles;
    const int64_t tiles = (count + kTileCols - 1) / kTileCols * kTileCols;
    // A short last block's spare tiles multiply as zeros; their outputs are not written.
    memset(v + count * wc.c * kWinogradPositions, 0,
           static_cast<size_t>((tiles - count) * wc.c * kWinogradPositions) * sizeof(float));
    transform_input(wc, x, first, count, v, rows);
    multiply(wc, u, v, tiles, m);
    transform_output(wc, m, first, count, y);
  }
}

void REMAT_CPU_ENTRY(winograd_weight_sums)(const WinogradConv& wc, const float* x, const float* dy,
                                           int64_t t0, int64_t t1, float* scratch, float* du) {
  float* v = scratch;
  float* g = scratch + wc.m_at;
  float* rows = scratch + wc.rows_at;
  if (t1 <= t0)
    memset(du, 0, static_cast<size_t>(wc.kpad * wc.c * kWinogradPositions) * sizeof(float));
  for (int64_t first = t0; first < t1; first += kWinogradTiles) {
    const int64_t count = t1 - first < kWinogradTiles ? t1 - first : kWinogradTiles;
    transform_input(wc, x, first, count, v, rows);
    transform_gradient(wc, dy, first, count, g);
    for (int64_t r0 = 0; r0 < wc.kpad; r0 += kRows) {
      const bool overwrite = first == t0;
      int64_t c0 = 0;
      for (; c0 + kTileCols <= wc.c; c0 += kTileCols) {
        sum_tiles<kTileCols>(wc, g, v, count, wc.kpad, r0, c0, overwrite, du);
      }
      sum_last_columns(wc, g, v, count, wc.kpad, r0, c0, overwrite, du);
    }
  }
}

}  // namespace cpu
}  // namespace remat
