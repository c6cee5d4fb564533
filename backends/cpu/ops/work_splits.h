// How the CPU ops cut their work among threads and passes, for the kernels and for the tests
// that size their cases from these constants (tests/ops: below, at and past each, on 1, 2 and
// 3 threads), so that a changed constant moves the tests with it.
#ifndef REMAT_BACKENDS_CPU_OPS_WORK_SPLITS_H_
#define REMAT_BACKENDS_CPU_OPS_WORK_SPLITS_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// matmul (ops/matmul.cc): rows (or columns) of C per tile where M (or N) is at least twice
/// this: large enough for the GEMM's own blocking to stay efficient.
constexpr int64_t kMatmulRowBlock = 256;
constexpr int64_t kMatmulColumnBlock = 256;
/// Tiles an op's products are cut into at least, where a product is small but long in K (the
/// weight gradient of a 256 x 256 layer): fewer would leave threads idle. Tiles are halved no
/// further than kMatmulMinBlock rows or columns.
constexpr int64_t kMatmulMinTiles = 4;
constexpr int64_t kMatmulMinBlock = 64;

/// reduce_sum (ops/reduce.cc): output columns summed per pass, a double (Accum) accumulator per
/// column on the stack.
constexpr int64_t kReduceColumnBlock = 256;

/// layernorm_grad (ops/norm.cc): columns of dgamma/dbeta summed per pass, double (Accum)
/// accumulators on the stack, no allocation; a thread's part of the columns holds at least
/// kLayerNormColumnGrain.
constexpr int64_t kLayerNormColumnBlock = 256;
constexpr int64_t kLayerNormColumnGrain = 16;

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_WORK_SPLITS_H_
