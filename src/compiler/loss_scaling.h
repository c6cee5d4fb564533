// Dynamic loss scaling: what `--loss-scale` asks for, and the ops and state a plan carries for it.
#ifndef REMAT_COMPILER_LOSS_SCALING_H_
#define REMAT_COMPILER_LOSS_SCALING_H_

#include <stdint.h>

#include <string>

#include "compiler/graph.h"
#include "compiler/precision.h"

namespace remat {
namespace compiler {

/// A parsed `--loss-scale`: "off", or "dynamic[:init=S][,interval=N]" with torch.amp.GradScaler's
/// defaults (S = 65536, doubled after N = 2000 finite steps in a row, halved on an overflow).
struct LossScaleSpec {
  bool dynamic = false;
  float init = 65536.0f;     ///< The first scale: a power of two, so scaling is exact.
  uint32_t interval = 2000;  ///< Finite steps in a row before the scale doubles.
};

/// Parses |text|; "" gives |precision|'s default: dynamic for fp16 (whose gradients underflow
/// without it), off otherwise. Throws CompileError naming the bad key or value.
LossScaleSpec parse_loss_scale(const std::string& text, Precision precision);

/// Adds the scale and clean-step state tensors of |spec| to |graph| (before autodiff, which
/// places the `scale` ops: autodiff.h) and records them in graph.loss_scaling.
void add_loss_scaling_state(Graph& graph, const LossScaleSpec& spec);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_LOSS_SCALING_H_
