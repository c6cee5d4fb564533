// Fused attention's score tiles from bfloat16 rows with AVX512-BF16's VDPBF16PS (ops/attention.cc
// runs them in bf16 plans where the CPU has it): the products of bfloat16 pairs are exact in
// float32 and summed in float32, as bf16_gemm() sums a bfloat16 product, so the scores differ from
// the float32 tiles' (ops/attention_tiles.h) in the last places only. Built with -mavx512bf16 where
// the compiler takes it (meson defines REMAT_CPU_BF16_GEMM); call only where
// bf16_gemm_avx512_available() (gemm/gemm.h).
#ifndef REMAT_BACKENDS_CPU_OPS_ATTENTION_BF16_H_
#define REMAT_BACKENDS_CPU_OPS_ATTENTION_BF16_H_

#include <stdint.h>

#include "backends/cpu/ops/attention_tiles.h"

namespace remat {
namespace cpu {

/// Depth pairs a score tile packs its keys by at a time: kAttentionBf16DepthPairs x
/// kAttentionKeyTile words of two bfloat16 (16 KB).
constexpr int64_t kAttentionBf16DepthPairs = 64;

/// One tile of bfloat16 rows against bfloat16 keys: row r of the left operand at a + r * lda, key
/// j at b + j * ldb, each |depth| values.
struct AttentionTileBf16 {
  const uint16_t* a;
  int64_t lda;
  const uint16_t* b;
  int64_t ldb;
  int64_t rows, keys, depth;  ///< keys <= kAttentionKeyTile
};

/// s[r * kAttentionKeyTile + j] = scale * (sum of a_r[d] * b_j[d]) for every row r and key j of
/// |t|, summed by VDPBF16PS: pair (2p, 2p + 1) after pair, in ascending p, each pair's two products
/// into a float32 sum (subnormal operands read as zero, subnormal sums flushed); s's columns from
/// t.keys on are left undefined. |pairs| is kAttentionBf16DepthPairs * kAttentionKeyTile words
/// where the call packs t's keys, kAttentionBf16DepthPairs pairs of depth at a time; where
/// |packed|, t.depth <= 2 * kAttentionBf16DepthPairs and |pairs| already holds the keys as a call
/// on them left it (a key tile's packing serves every query tile).
void attention_scores_bf16(const AttentionTileBf16& t, float scale, uint32_t* pairs, bool packed,
                           float* s);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_ATTENTION_BF16_H_
