// Optimizer specs ("sgd:lr=0.01,momentum=0.9", "adam:lr=1e-3", "adamw:...") and their update ops.
#ifndef REMAT_COMPILER_OPTIMIZER_H_
#define REMAT_COMPILER_OPTIMIZER_H_

#include <string>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// A parsed optimizer with PyTorch's defaults for what the string leaves out.
struct OptimizerSpec {
  enum class Kind { kSgd, kAdam, kAdamW } kind = Kind::kSgd;
  float lr = 0.01f;           ///< Learning rate.
  float momentum = 0.0f;      ///< SGD momentum.
  float weight_decay = 0.0f;  ///< L2 (SGD, Adam) or decoupled (AdamW) weight decay.
  float beta1 = 0.9f;         ///< Adam first-moment decay.
  float beta2 = 0.999f;       ///< Adam second-moment decay.
  float eps = 1e-8f;          ///< Adam denominator term.
  std::string text;           ///< Canonical spelling, stored in the plan.
};

/// Parses |text|; throws CompileError naming the bad key or value.
OptimizerSpec parse_optimizer(const std::string& text);

/// Appends the update op of parameter |param| (whose gradient is |grad|) to |graph|, creating
/// the optimizer state it needs. |source| is the forward op after whose backward it runs.
void append_update(Graph& graph, const OptimizerSpec& spec, int param, int grad, int source);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_OPTIMIZER_H_
