// The blocking both bf16_gemm() engines share (gemm.h): AMX tiles (amx.cc) and AVX512-BF16
// (avx512_bf16.cc) read the same packed operands, and differ only in how they compute one
// 32 x 32 block of C from them.
//
// BLIS-style: op(B) is packed kBf16Kc x kBf16Nc at a time into tiles of 16 k-pairs x 16 columns
// (the pairs interleaved: one 32-bit word holds a column's two values of k, as TDPBF16PS and
// VDPBF16PS read them), op(A) kBf16Mc x kBf16Kc at a time into tiles of 16 rows x 32 k; each
// 32 x 32 block of C is summed over the block's k in steps of 32 by the engine's kernel. Between
// blocks of k the partial sums wait in C (exact float32). So each element of C is summed in an
// order fixed by K alone: a row or column slice of a product gives the bits of the whole, and
// the thread count never changes them. Operands are zero-padded to whole tiles; a block of C
// that C's edge cuts goes through a 32 x 32 buffer.
#ifndef REMAT_BACKENDS_CPU_GEMM_BF16_BLOCKS_H_
#define REMAT_BACKENDS_CPU_GEMM_BF16_BLOCKS_H_

#include <stdint.h>

#include "backends/cpu/gemm/gemm.h"

namespace remat {
namespace cpu {

/// Rows of every packed tile; a tile of A is kBf16TileRows rows of kBf16TileK values of k, a
/// tile of B kBf16TileK / 2 rows of k-pairs for kBf16TileRows columns.
constexpr int64_t kBf16TileRows = 16;
/// bfloat16 values of k in one row of an A tile: one k-step.
constexpr int64_t kBf16TileK = 32;
/// bfloat16 values in one tile (1 KB).
constexpr int64_t kBf16TileElems = kBf16TileRows * kBf16TileK;
/// Rows and columns of the block of C a kernel computes.
constexpr int64_t kBf16Block = 32;

/// Computes one kBf16Block x kBf16Block block of C from packed tiles: |a| the block's two row
/// tiles (k-step s of the first at a + s * kBf16TileElems, the second's at a + (steps + s) *
/// kBf16TileElems), |b| its two column tiles likewise, |steps| k-steps. Starts from |c| (rows
/// |ldc| floats apart) when |load|, else from zero, adds the steps in order, and writes the sums
/// to |c|.
using Bf16BlockKernel = void (*)(const uint16_t* a, const uint16_t* b, int64_t steps, float* c,
                                 int64_t ldc, bool load);

/// Computes |g| with |kernel| for each block of C, on the calling thread: packs the operands
/// into |g|.pack, handles C's edges, empty K, beta and alpha.
void bf16_blocked_gemm(const Bf16Gemm& g, Bf16BlockKernel kernel);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_GEMM_BF16_BLOCKS_H_
