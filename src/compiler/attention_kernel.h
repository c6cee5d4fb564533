// How a model's attention is planned: what `--attention` chooses.
#ifndef REMAT_COMPILER_ATTENTION_KERNEL_H_
#define REMAT_COMPILER_ATTENTION_KERNEL_H_

#include <string>

namespace remat {
namespace compiler {

/// The ops a transformer's scaled dot-product attention compiles to (docs/templates.md).
enum class AttentionKernel {
  /// One attention op and one attention_grad op per layer: the [B, heads, Sq, Sk] scores and
  /// probabilities are never stored; the backward op recomputes them tile by tile. The default.
  kFused,
  /// head_matmul, softmax, dropout, head_matmul: the probabilities are a tensor of the plan.
  kUnfused,
};

/// "fused" or "unfused".
const char* attention_kernel_name(AttentionKernel kernel);

/// Parses "fused" or "unfused"; returns false on anything else.
bool parse_attention_kernel(const std::string& text, AttentionKernel* out);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_ATTENTION_KERNEL_H_
