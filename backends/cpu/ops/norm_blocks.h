// How the CPU's layer norm gradient splits dgamma and dbeta (ops/norm.cc), for the kernel and
// for the tests that size their cases from it (tests/ops/test_ops_gradients.cc).
#ifndef REMAT_BACKENDS_CPU_OPS_NORM_BLOCKS_H_
#define REMAT_BACKENDS_CPU_OPS_NORM_BLOCKS_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// Columns of dgamma/dbeta summed per pass: double accumulators on the stack, no allocation.
constexpr int64_t kLayerNormColumnBlock = 256;
/// Columns a thread's part of dgamma/dbeta holds at least.
constexpr int64_t kLayerNormColumnGrain = 16;

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_NORM_BLOCKS_H_
