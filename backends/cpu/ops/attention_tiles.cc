// The per-instruction-set builds of ops/attention_tiles.h: meson compiles this file with
// REMAT_CPU_ISA set, the matching -m flags and -ffp-contract=off (isa/build.h), as
// isa/math_span.cc. A score tile transposes its keys into a stack buffer, depth-major, so that
// a row's scores against the tile's keys are whole vectors summed over the depth, with no
// horizontal sum.
#include <string.h>

#include "backends/cpu/ops/attention_tiles.h"
#include "backends/cpu/isa/build.h"

namespace remat {
namespace cpu {
namespace {

constexpr int64_t kKeyVecs = kAttentionKeyTile / kVec;
static_assert(kAttentionKeyTile % kVec == 0, "a key tile is whole vectors");

}  // namespace

void REMAT_CPU_ENTRY(attention_scores)(const AttentionTile& t, float scale, float* s) {
  alignas(64) float bt[kAttentionDepthChunk * kAttentionKeyTile];
  for (int64_t d0 = 0; d0 < t.depth; d0 += kAttentionDepthChunk) {
    const int64_t dc = t.depth - d0 < kAttentionDepthChunk ? t.depth - d0 : kAttentionDepthChunk;
    // Keys past t.keys are zeros: their scores are computed and never read.
    for (int64_t d = 0; d < dc; ++d) {
      float* col = bt + d * kAttentionKeyTile;
      for (int64_t j = 0; j < t.keys; ++j) col[j] = t.b[j * t.ldb + d0 + d];
      for (int64_t j = t.keys; j < kAttentionKeyTile; ++j) col[j] = 0.0f;
    }
    for (int64_t r = 0; r < t.rows; ++r) {
      const float* __restrict ar = t.a + r * t.lda + d0;
      float* sr = s + r * kAttentionKeyTile;
      vec acc[kKeyVecs];
      if (d0 == 0) {
        for (int64_t v = 0; v < kKeyVecs; ++v) acc[v] = vec{} + 0.0f;
      } else {
        for (int64_t v = 0; v < kKeyVecs; ++v) memcpy(&acc[v], sr + v * kVec, sizeof(vec));
      }
      for (int64_t d = 0; d < dc; ++d) {
        const vec x = vec{} + ar[d];
        const float* col = bt + d * kAttentionKeyTile;
        for (int64_t v = 0; v < kKeyVecs; ++v) {
          vec k;
          memcpy(&k, col + v * kVec, sizeof(vec));
          acc[v] = acc[v] + x * k;
        }
      }
      if (d0 + dc >= t.depth) {
        for (int64_t v = 0; v < kKeyVecs; ++v) acc[v] = acc[v] * scale;
      }
      for (int64_t v = 0; v < kKeyVecs; ++v) memcpy(sr + v * kVec, &acc[v], sizeof(vec));
    }
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
    float* __restrict yr = y + r * ldy;
    const float* wr = w + r * kAttentionKeyTile;
    for (int64_t j = 0; j < t.keys; ++j) {
      const float wj = wr[j];
      if (wj == 0.0f) continue;
      const float* __restrict bj = t.b + j * t.ldb;
      for (int64_t c = 0; c < dim; ++c) yr[c] += wj * bj[c];
    }
  }
}

void REMAT_CPU_ENTRY(attention_add_rows)(const AttentionTile& t, const float* w, int64_t dim,
                                         float* y, int64_t ldy) {
  for (int64_t j = 0; j < t.keys; ++j) {
    float* __restrict yj = y + j * ldy;
    for (int64_t r = 0; r < t.rows; ++r) {
      const float wr = w[r * kAttentionKeyTile + j];
      if (wr == 0.0f) continue;
      const float* __restrict ar = t.a + r * t.lda;
      for (int64_t c = 0; c < dim; ++c) yj[c] += wr * ar[c];
    }
  }
}

}  // namespace cpu
}  // namespace remat
