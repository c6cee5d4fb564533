// Names of the matrix products' precisions, as the CLI takes them.
#include "compiler/matmul_precision.h"

namespace remat {
namespace compiler {

const char* matmul_precision_name(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::kFp32: return "fp32";
    case MatmulPrecision::kTf32: return "tf32";
  }
  return "?";
}

bool parse_matmul_precision(const std::string& text, MatmulPrecision* out) {
  for (MatmulPrecision p : {MatmulPrecision::kFp32, MatmulPrecision::kTf32}) {
    if (text == matmul_precision_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

}  // namespace compiler
}  // namespace remat
