// Winograd's scratch layout and filter transform (conv/winograd.h), which run once per
// convolution and need no vectors, and the choice of the tiles' build for this CPU.
#include "backends/cpu/conv/winograd.h"

#include "backends/cpu/isa/isa.h"

namespace remat {
namespace cpu {

int64_t winograd_tile_count(const WinogradConv& wc) {
  return wc.n * ((wc.p + 1) / 2) * ((wc.q + 1) / 2);
}

int64_t winograd_layout(WinogradConv* wc) {
  wc->kpad = (wc->k + 3) / 4 * 4;
  const int64_t tile_rows = (wc->p + 1) / 2, tile_cols = (wc->q + 1) / 2;
  // A block's tiles of one image span at most this many tile rows (starting mid-row).
  int64_t spanned = (kWinogradTiles + tile_cols - 1) / tile_cols + 1;
  if (spanned > tile_rows) spanned = tile_rows;
  wc->m_at = kWinogradTiles * wc->c * kWinogradPositions;
  wc->rows_at = wc->m_at + kWinogradTiles * wc->kpad * kWinogradPositions;
  wc->rows_floats = (2 * spanned + 2) * (2 * tile_cols + 2);
  return wc->rows_at + wc->rows_floats;
}

void winograd_filters(const float* w, int64_t k, int64_t c, int64_t kpad, bool flipped, int64_t k0,
                      int64_t k1, float* u) {
  for (int64_t o = k0; o < k1; ++o) {
    for (int64_t i = 0; i < c; ++i) {
      float g[3][3];
      for (int64_t r = 0; r < 3; ++r) {
        for (int64_t s = 0; s < 3; ++s) {
          g[r][s] =
              flipped ? w[(i * k + o) * 9 + (2 - r) * 3 + (2 - s)] : w[(o * c + i) * 9 + r * 3 + s];
        }
      }
      // G g: rows g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2; then the same of its columns.
      float gg[4][3];
      for (int64_t s = 0; s < 3; ++s) {
        gg[0][s] = g[0][s];
        gg[1][s] = (g[0][s] + g[1][s] + g[2][s]) * 0.5f;
        gg[2][s] = (g[0][s] - g[1][s] + g[2][s]) * 0.5f;
        gg[3][s] = g[2][s];
      }
      float* out = u + (i * kpad + o) * kWinogradPositions;
      for (int64_t a = 0; a < 4; ++a) {
        out[a * 4 + 0] = gg[a][0];
        out[a * 4 + 1] = (gg[a][0] + gg[a][1] + gg[a][2]) * 0.5f;
        out[a * 4 + 2] = (gg[a][0] - gg[a][1] + gg[a][2]) * 0.5f;
        out[a * 4 + 3] = gg[a][2];
      }
    }
  }
}

int64_t winograd_weight_parts(const WinogradConv& wc) {
  const int64_t fit = kWinogradFilterFloats / (wc.kpad * wc.c * kWinogradPositions);
  return fit < kWinogradWeightParts ? fit : kWinogradWeightParts;
}

void winograd_filter_gradient(const float* du, int64_t parts, int64_t part_floats, int64_t c,
                              int64_t k0, int64_t k1, float* dw) {
  for (int64_t o = k0; o < k1; ++o) {
    for (int64_t i = 0; i < c; ++i) {
      float d[kWinogradPositions];
      const float* first = du + (o * c + i) * kWinogradPositions;
      for (int64_t e = 0; e < kWinogradPositions; ++e) d[e] = first[e];
      for (int64_t p = 1; p < parts; ++p) {
        for (int64_t e = 0; e < kWinogradPositions; ++e) d[e] += first[p * part_floats + e];
      }
      // G^T d: rows d0 + (d1 + d2) / 2, (d1 - d2) / 2, (d1 + d2) / 2 + d3; then the same of its
      // columns.
      float rows[3][4];
      for (int64_t b = 0; b < 4; ++b) {
        const float d0 = d[b], d1 = d[4 + b], d2 = d[8 + b], d3 = d[12 + b];
        rows[0][b] = d0 + (d1 + d2) * 0.5f;
        rows[1][b] = (d1 - d2) * 0.5f;
        rows[2][b] = (d1 + d2) * 0.5f + d3;
      }
      float* out = dw + (o * c + i) * 9;
      for (int64_t a = 0; a < 3; ++a) {
        const float* r = rows[a];
        out[a * 3 + 0] = r[0] + (r[1] + r[2]) * 0.5f;
        out[a * 3 + 1] = (r[1] - r[2]) * 0.5f;
        out[a * 3 + 2] = (r[1] + r[2]) * 0.5f + r[3];
      }
    }
  }
}

void winograd_weight_sums(const WinogradConv& wc, const float* x, const float* dy, int64_t t0,
                          int64_t t1, float* scratch, float* du) {
  REMAT_CPU_BEST(winograd_weight_sums)(wc, x, dy, t0, t1, scratch, du);
}

void winograd_tiles(const WinogradConv& wc, const float* x, const float* u, int64_t t0, int64_t t1,
                    float* scratch, float* y) {
  REMAT_CPU_BEST(winograd_tiles)(wc, x, u, t0, t1, scratch, y);
}

}  // namespace cpu
}  // namespace remat
