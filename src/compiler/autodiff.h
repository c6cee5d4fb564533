// Reverse-mode autodiff over the graph IR and the optimizer's updates, each as early as its
// gradient is final (so gradients need not all be alive at once), and the non-finite guard.
#ifndef REMAT_COMPILER_AUTODIFF_H_
#define REMAT_COMPILER_AUTODIFF_H_

#include "compiler/data_parallel.h"
#include "compiler/finite_checks.h"
#include "compiler/graph.h"
#include "compiler/optimizer.h"

namespace remat {
namespace compiler {

/// Appends to |graph| (which holds forward ops only, ending in a loss) the backward ops of
/// every trainable parameter and the optimizer's update ops, each update after the op that
/// finishes its gradient, and the finite_check ops |finite_checks| asks for (compiler.h); with
/// |data_parallel| enabled, the gradients' all-reduce in buckets, each update after its
/// bucket's wait (compiler/data_parallel.h).
/// Throws CompileError when the graph has no loss or a parameter does not reach it.
void append_backward_and_updates(Graph& graph, const OptimizerSpec& optimizer,
                                 FiniteChecks finite_checks,
                                 const DataParallel& data_parallel = DataParallel());

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_AUTODIFF_H_
