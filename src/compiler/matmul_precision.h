// The precision a plan asks of its matrix products: what `--matmul-precision` writes.
#ifndef REMAT_COMPILER_MATMUL_PRECISION_H_
#define REMAT_COMPILER_MATMUL_PRECISION_H_

#include <string>

namespace remat {
namespace compiler {

/// How a plan's matmul and head_matmul ops may round their inputs (docs/plan-format.md,
/// Plan.matmul_precision). Values are the schema's MatmulPrecision.
enum class MatmulPrecision {
  /// Float32 products and sums: what every backend computes, and the default.
  kFp32 = 0,
  /// Inputs rounded to TF32, float32 sums, on backends whose profile has tf32_matmuls (CUDA);
  /// the others compute float32 and say so (docs/backends.md).
  kTf32 = 1,
};

/// "fp32" or "tf32".
const char* matmul_precision_name(MatmulPrecision precision);

/// Parses "fp32" or "tf32"; returns false on anything else.
bool parse_matmul_precision(const std::string& text, MatmulPrecision* out);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_MATMUL_PRECISION_H_
