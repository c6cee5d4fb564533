// Reverse-mode autodiff over the graph IR, with each parameter's update placed as early as
// its gradient is final (so gradients need not all be alive at once).
#ifndef REMAT_COMPILER_AUTODIFF_H_
#define REMAT_COMPILER_AUTODIFF_H_

#include "compiler/graph.h"
#include "compiler/optimizer.h"

namespace remat {
namespace compiler {

/// Appends to |graph| (which holds forward ops only, ending in a loss) the backward ops of
/// every trainable parameter and the optimizer's update ops. Throws CompileError when the graph
/// has no loss or a parameter does not reach it.
void append_backward_and_updates(Graph& graph, const OptimizerSpec& optimizer);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_AUTODIFF_H_
