// The per-instruction-set builds of ops/attention_tiles.h: meson compiles this file with
// REMAT_CPU_ISA set, the matching -m flags and -ffp-contract=off (isa/build.h), as
// isa/math_span.cc. A score tile transposes its keys into the caller's buffer, depth-major, so
// that a row's scores against the tile's keys are whole vectors summed over the depth, with no
// horizontal sum; the sums of weighted rows keep an output row's part in registers.
#include <string.h>

#include "backends/cpu/ops/attention_tiles.h"
#include "backends/cpu/isa/build.h"

namespace remat {
namespace cpu {
namespace {

constexpr int64_t kKeyVecs = kAttentionKeyTile / kVec;
static_assert(kAttentionKeyTile % kVec == 0, "a key tile is whole vectors");
// Rows of a score tile summed at once, each transposed key vector loaded once for them: with
// AVX-512's 32 registers, four rows' four vectors; the narrower builds have no registers for
// more than a row's 64 scores.
constexpr int64_t kScoreRows = kVec == 16 ? 4 : 1;
// Floats of an output row kept in registers while a tile's weights add into them.
constexpr int64_t kChunk = kKeyVecs * kVec;

inline vec load(const float* p) {
  vec v;
  memcpy(&v, p, sizeof(vec));
  return v;
}

inline void store(float* p, vec v) { memcpy(p, &v, sizeof(vec)); }

// Scores of |kRows| rows from r0 against the transposed keys bt (dc of depth), added to s's
// sums so far unless |first|, times |scale| when |last|.
template <int64_t kRows>
void score_rows(const AttentionTile& t, int64_t r0, int64_t d0, int64_t dc, const float* bt,
                bool first, bool last, float scale, float* s) {
  vec acc[kRows][kKeyVecs];
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      acc[r][v] = first ? vec{} + 0.0f : load(s + (r0 + r) * kAttentionKeyTile + v * kVec);
    }
  }
  for (int64_t d = 0; d < dc; ++d) {
    const float* col = bt + d * kAttentionKeyTile;
    vec x[kRows];
    for (int64_t r = 0; r < kRows; ++r) x[r] = vec{} + t.a[(r0 + r) * t.lda + d0 + d];
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      const vec k = load(col + v * kVec);
      for (int64_t r = 0; r < kRows; ++r) acc[r][v] = acc[r][v] + x[r] * k;
    }
  }
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      store(s + (r0 + r) * kAttentionKeyTile + v * kVec, last ? acc[r][v] * scale : acc[r][v]);
    }
  }
}

// y[c] += w_i * x_i[c] for i < |count| in order, skipping weights 0: x_i at x + i * ldx, w_i at
// w + i * ldw; a row's first kChunk-float parts in registers, the rest one float at a time.
void add_weighted(const float* w, int64_t ldw, int64_t count, const float* x, int64_t ldx,
                  int64_t dim, float* __restrict y) {
  int64_t c0 = 0;
  for (; c0 + kChunk <= dim; c0 += kChunk) {
    vec acc[kKeyVecs];
    for (int64_t v = 0; v < kKeyVecs; ++v) acc[v] = load(y + c0 + v * kVec);
    for (int64_t i = 0; i < count; ++i) {
      const float wi = w[i * ldw];
      if (wi == 0.0f) continue;
      const vec wv = vec{} + wi;
      const float* xi = x + i * ldx + c0;
      for (int64_t v = 0; v < kKeyVecs; ++v) acc[v] = acc[v] + wv * load(xi + v * kVec);
    }
    for (int64_t v = 0; v < kKeyVecs; ++v) store(y + c0 + v * kVec, acc[v]);
  }
  if (c0 == dim) return;
  for (int64_t i = 0; i < count; ++i) {
    const float wi = w[i * ldw];
    if (wi == 0.0f) continue;
    const float* __restrict xi = x + i * ldx;
    for (int64_t c = c0; c < dim; ++c) y[c] += wi * xi[c];
  }
}

}  // namespace

void REMAT_CPU_ENTRY(attention_scores)(const AttentionTile& t, float scale, float* bt,
                                       bool transposed, float* s) {
  for (int64_t d0 = 0; d0 < t.depth; d0 += kAttentionDepthChunk) {
    const int64_t dc = t.depth - d0 < kAttentionDepthChunk ? t.depth - d0 : kAttentionDepthChunk;
    // Keys past t.keys are zeros: their scores are computed and never read.
    for (int64_t d = 0; !transposed && d < dc; ++d) {
      float* col = bt + d * kAttentionKeyTile;
      for (int64_t j = 0; j < t.keys; ++j) col[j] = t.b[j * t.ldb + d0 + d];
      for (int64_t j = t.keys; j < kAttentionKeyTile; ++j) col[j] = 0.0f;
    }
    const bool first = d0 == 0, last = d0 + dc >= t.depth;
    int64_t r = 0;
    for (; r + kScoreRows <= t.rows; r += kScoreRows) {
      score_rows<kScoreRows>(t, r, d0, dc, bt, first, last, scale, s);
    }
    for (; r < t.rows; ++r) score_rows<1>(t, r, d0, dc, bt, first, last, scale, s);
  }
  if (t.depth <= 0) {
    for (int64_t r = 0; r < t.rows; ++r) {
      for (int64_t j = 0; j < kAttentionKeyTile; ++j) s[r * kAttentionKeyTile + j] = 0.0f;
    }
  }
}

void REMAT_CPU_ENTRY(attention_add_keys)(const AttentionTile& t, const float* w, int64_t dim,
                                         float* y, int64_t ldy) {
  for (int64_t r = 0; r < t.rows; ++r) {
    add_weighted(w + r * kAttentionKeyTile, 1, t.keys, t.b, t.ldb, dim, y + r * ldy);
  }
}

void REMAT_CPU_ENTRY(attention_add_rows)(const AttentionTile& t, const float* w, int64_t dim,
                                         float* y, int64_t ldy) {
  for (int64_t j = 0; j < t.keys; ++j) {
    add_weighted(w + j, kAttentionKeyTile, t.rows, t.a, t.lda, dim, y + j * ldy);
  }
}

}  // namespace cpu
}  // namespace remat
