// bf16_gemm() with AVX512-BF16 (gemm.h): bfloat16 operands, float32 sums, for the matmul ops of
// 16-bit plans on processors with VDPBF16PS but no AMX tiles (AMD Zen 4 and later; Intel Cooper
// Lake). Built with -mavx512bf16 where the compiler takes it (meson defines REMAT_CPU_BF16_GEMM)
// and called only where bf16_gemm_avx512_available() (gemm.cc) says the CPU has it. The packed
// operands and the blocking are bf16_blocks.h's, the ones the AMX engine reads.
//
// A block of C, 32 x 32, is four passes of 8 rows by 32 columns (16 accumulators of 16 floats,
// two per row): for each k-pair p of a step, the two B rows of 16 column pairs are loaded once
// and each of the 8 rows' pair (A(i, 2p), A(i, 2p + 1)), one 32-bit word, is broadcast and
// multiplied with them by VDPBF16PS, which adds both products of each pair to a column's sum.
// Each element of C is thus summed pair after pair, in k's order: fixed by K alone.
#include <immintrin.h>
#include <string.h>

#include "backends/cpu/gemm/bf16_blocks.h"

namespace remat {
namespace cpu {
namespace {

constexpr int kPassRows = 8;
constexpr int64_t kPairsPerStep = kBf16TileK / 2;
// k-steps of a block summed before the next rows are: 8 steps of the two B tiles are 16 KB.
constexpr int64_t kStepsInL1 = 8;

// Rows [row0, row0 + kPassRows) of a block of C (rows |ldc| floats apart): |a| the row tile
// that holds them (its k-steps kBf16TileElems apart), |b| and |b1| the two column tiles.
void pass(const uint16_t* a, int row0, const uint16_t* b, const uint16_t* b1, int64_t steps,
          float* c, int64_t ldc, bool load) {
  __m512 sums[kPassRows][2];
  for (int r = 0; r < kPassRows; ++r) {
    float* row = c + r * ldc;
    sums[r][0] = load ? _mm512_loadu_ps(row) : _mm512_setzero_ps();
    sums[r][1] = load ? _mm512_loadu_ps(row + 16) : _mm512_setzero_ps();
  }
  for (int64_t s = 0; s < steps; ++s) {
    const uint16_t* tile_a = a + s * kBf16TileElems + row0 * kBf16TileK;
    const uint16_t* tile_b = b + s * kBf16TileElems;
    const uint16_t* tile_b1 = b1 + s * kBf16TileElems;
    for (int64_t p = 0; p < kPairsPerStep; ++p) {
      const __m512bh left = (__m512bh)_mm512_loadu_si512(tile_b + p * 32);
      const __m512bh right = (__m512bh)_mm512_loadu_si512(tile_b1 + p * 32);
      for (int r = 0; r < kPassRows; ++r) {
        uint32_t pair;
        memcpy(&pair, tile_a + r * kBf16TileK + 2 * p, sizeof pair);
        const __m512bh from_a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
        sums[r][0] = _mm512_dpbf16_ps(sums[r][0], from_a, left);
        sums[r][1] = _mm512_dpbf16_ps(sums[r][1], from_a, right);
      }
    }
  }
  for (int r = 0; r < kPassRows; ++r) {
    float* row = c + r * ldc;
    _mm512_storeu_ps(row, sums[r][0]);
    _mm512_storeu_ps(row + 16, sums[r][1]);
  }
}

// One block of C (a Bf16BlockKernel). Its k-steps go kStepsInL1 at a time through the four
// passes, so that the two B tiles' steps (2 KB each) stay in L1 while every row reads them; the
// sums wait in C between them, exactly, so each element's order of sums is the same.
void block(const uint16_t* a, const uint16_t* b, int64_t steps, float* c, int64_t ldc, bool load) {
  const uint16_t* b1 = b + steps * kBf16TileElems;
  for (int64_t s0 = 0; s0 < steps; s0 += kStepsInL1) {
    const int64_t count = steps - s0 < kStepsInL1 ? steps - s0 : kStepsInL1;
    for (int64_t row0 = 0; row0 < kBf16Block; row0 += kPassRows) {
      // Rows 16 and on are the second A tile's.
      const uint16_t* tile = a + ((row0 / kBf16TileRows) * steps + s0) * kBf16TileElems;
      pass(tile, static_cast<int>(row0 % kBf16TileRows), b + s0 * kBf16TileElems,
           b1 + s0 * kBf16TileElems, count, c + row0 * ldc, ldc, load || s0 > 0);
    }
  }
}

}  // namespace

void bf16_gemm_avx512(const Bf16Gemm& g) { bf16_blocked_gemm(g, block); }

}  // namespace cpu
}  // namespace remat
