// Products of 16-bit float operands on the packed engine (gemm.h's packed_gemm): each operand is
// read as it is stored and converted to float32 while its panels are packed (a GemmPacker), so
// no float32 copy of it is ever made. Every panel holds the float32 values a widened copy would
// hold, so the product's bits are packed_gemm()'s on the widened operands.
#ifndef REMAT_BACKENDS_CPU_GEMM_HALF_PANELS_H_
#define REMAT_BACKENDS_CPU_GEMM_HALF_PANELS_H_

#include <stdint.h>

#include "backends/cpu/gemm/gemm.h"

namespace remat {
namespace cpu {

/// A 16-bit operand as the packed engine sees it: op(M), K x X (X: op(A)'s rows or op(B)'s
/// columns), element (k, x) at data[x * ld + k] where k_contiguous, else at data[k * ld + x].
/// op(A) of a row-major A not transposed, and op(B) of a B transposed, run along K.
struct HalfOperand {
  const uint16_t* data;
  int64_t ld;
  bool k_contiguous;
  uint8_t dtype;  ///< REMAT_DTYPE_F16 or REMAT_DTYPE_BF16
};

/// A GemmPacker that widens |operand| (which must outlive the product) into the engine's panels.
GemmPacker half_packer(const HalfOperand* operand);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_GEMM_HALF_PANELS_H_
