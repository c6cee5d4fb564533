// The vector loops of fused attention's tiles (ops/attention.cc), compiled once per instruction
// set (ops/attention_tiles.cc; isa/isa.h) because the baseline build multiplies four floats at a
// time where AVX-512 does sixteen. Each output element sums its terms one after another in the
// order the comments give, and no build contracts a product and a sum into one multiply-add
// (-ffp-contract=off), so every build gives the same bits. ops/attention.cc keeps the softmax,
// dropout and thread bookkeeping and calls the build the CPU runs best.
#ifndef REMAT_BACKENDS_CPU_OPS_ATTENTION_TILES_H_
#define REMAT_BACKENDS_CPU_OPS_ATTENTION_TILES_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// Keys of a tile: the row length of every tile of weights below.
constexpr int64_t kAttentionKeyTile = 64;
/// Depth a score tile transposes its keys by at a time (16 KB).
constexpr int64_t kAttentionDepthChunk = 64;

/// One tile of rows against keys: row r of the left operand at a + r * lda, key j at
/// b + j * ldb, each |depth| floats; weights w[r * kAttentionKeyTile + j].
struct AttentionTile {
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  int64_t rows, keys, depth;  ///< keys <= kAttentionKeyTile
};

/// s[r * kAttentionKeyTile + j] = scale * (sum over d, ascending, of a_r[d] * b_j[d]) for every
/// row r and key j of |t|; s's columns from t.keys on are left undefined. |bt| is
/// kAttentionDepthChunk * kAttentionKeyTile floats where the call transposes t's keys, a chunk
/// of depth at a time; where |transposed|, t.depth <= kAttentionDepthChunk and bt already holds
/// the keys as a call on them left it (a key tile's transpose serves every query tile).
void attention_scores_baseline(const AttentionTile& t, float scale, float* bt, bool transposed,
                               float* s);
void attention_scores_avx2(const AttentionTile& t, float scale, float* bt, bool transposed,
                           float* s);
void attention_scores_avx512(const AttentionTile& t, float scale, float* bt, bool transposed,
                             float* s);

/// y_r[c] += w[r][j] * b_j[c] for keys j ascending, skipping the weights that are 0, for each
/// row r and c < |dim| (t.a and t.depth are not read); y_r at y + r * ldy.
void attention_add_keys_baseline(const AttentionTile& t, const float* w, int64_t dim, float* y,
                                 int64_t ldy);
void attention_add_keys_avx2(const AttentionTile& t, const float* w, int64_t dim, float* y,
                             int64_t ldy);
void attention_add_keys_avx512(const AttentionTile& t, const float* w, int64_t dim, float* y,
                               int64_t ldy);

/// y_j[c] += w[r][j] * a_r[c] for rows r ascending, skipping the weights that are 0, for each key
/// j and c < |dim| (t.b and t.depth are not read); y_j at y + j * ldy.
void attention_add_rows_baseline(const AttentionTile& t, const float* w, int64_t dim, float* y,
                                 int64_t ldy);
void attention_add_rows_avx2(const AttentionTile& t, const float* w, int64_t dim, float* y,
                             int64_t ldy);
void attention_add_rows_avx512(const AttentionTile& t, const float* w, int64_t dim, float* y,
                               int64_t ldy);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_ATTENTION_TILES_H_
