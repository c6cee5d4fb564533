// Score tiles from bfloat16 rows with VDPBF16PS (ops/attention_bf16.h). The keys of a tile are
// packed pair-major: word p * kAttentionKeyTile + j holds key j's depth pair p, so that a row's
// pair, broadcast, meets four vectors of sixteen keys' pairs; four rows at a time keep 16
// accumulators of 16 scores.
#include "backends/cpu/ops/attention_bf16.h"

#include <immintrin.h>
#include <string.h>

namespace remat {
namespace cpu {
namespace {

constexpr int64_t kKeyVecs = kAttentionKeyTile / 16;
constexpr int64_t kScoreRows = 4;

// Depth pair |p| of the |depth| bfloat16 values at |x|: x[2p] low, x[2p + 1] (0 past the depth)
// high, as VDPBF16PS pairs a word's halves.
inline uint32_t pair_at(const uint16_t* x, int64_t p, int64_t depth) {
  const int64_t d = 2 * p;
  if (d + 1 < depth) {
    uint32_t word;
    memcpy(&word, x + d, sizeof word);
    return word;
  }
  return x[d];
}

// Rows [r0, r0 + kRows) against the packed pairs [p0, p0 + pc), added to s's sums so far unless
// |first|, times |scale| when |last|.
template <int64_t kRows>
void score_rows(const AttentionTileBf16& t, int64_t r0, int64_t p0, int64_t pc,
                const uint32_t* pairs, bool first, bool last, float scale, float* s) {
  __m512 acc[kRows][kKeyVecs];
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      acc[r][v] =
          first ? _mm512_setzero_ps() : _mm512_loadu_ps(s + (r0 + r) * kAttentionKeyTile + v * 16);
    }
  }
  for (int64_t p = 0; p < pc; ++p) {
    __m512bh keys[kKeyVecs];
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      keys[v] = (__m512bh)_mm512_loadu_si512(pairs + p * kAttentionKeyTile + v * 16);
    }
    for (int64_t r = 0; r < kRows; ++r) {
      const uint32_t word = pair_at(t.a + (r0 + r) * t.lda, p0 + p, t.depth);
      const __m512bh x = (__m512bh)_mm512_set1_epi32(static_cast<int>(word));
      for (int64_t v = 0; v < kKeyVecs; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], x, keys[v]);
    }
  }
  const __m512 by = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t v = 0; v < kKeyVecs; ++v) {
      _mm512_storeu_ps(s + (r0 + r) * kAttentionKeyTile + v * 16,
                       last ? _mm512_mul_ps(acc[r][v], by) : acc[r][v]);
    }
  }
}

}  // namespace

void attention_scores_bf16(const AttentionTileBf16& t, float scale, uint32_t* pairs, bool packed,
                           float* s) {
  const int64_t total = (t.depth + 1) / 2;
  for (int64_t p0 = 0; p0 < total; p0 += kAttentionBf16DepthPairs) {
    const int64_t pc =
        total - p0 < kAttentionBf16DepthPairs ? total - p0 : kAttentionBf16DepthPairs;
    // Keys past t.keys are zeros: their scores are computed and never read.
    for (int64_t p = 0; !packed && p < pc; ++p) {
      uint32_t* row = pairs + p * kAttentionKeyTile;
      for (int64_t j = 0; j < t.keys; ++j) row[j] = pair_at(t.b + j * t.ldb, p0 + p, t.depth);
      for (int64_t j = t.keys; j < kAttentionKeyTile; ++j) row[j] = 0;
    }
    const bool first = p0 == 0, last = p0 + pc >= total;
    int64_t r = 0;
    for (; r + kScoreRows <= t.rows; r += kScoreRows) {
      score_rows<kScoreRows>(t, r, p0, pc, pairs, first, last, scale, s);
    }
    for (; r < t.rows; ++r) score_rows<1>(t, r, p0, pc, pairs, first, last, scale, s);
  }
  if (total <= 0) {
    for (int64_t r = 0; r < t.rows; ++r) {
      for (int64_t j = 0; j < kAttentionKeyTile; ++j) s[r * kAttentionKeyTile + j] = 0.0f;
    }
  }
}

}  // namespace cpu
}  // namespace remat
