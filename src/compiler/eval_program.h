// The eval program a plan may carry: the forward pass alone, for evaluation between steps.
#ifndef REMAT_COMPILER_EVAL_PROGRAM_H_
#define REMAT_COMPILER_EVAL_PROGRAM_H_

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Appends to |graph| its eval program (docs/eval.md), which remat_session_eval runs and a step
/// does not: a copy of |forward| (the graph's forward ops, as they were before autodiff) on
/// tensors of its own named NAME@eval, which read the same inputs, labels and parameters.
/// Dropout is left out (its output is its input, as in torch's eval mode); batch norms normalise
/// with their running statistics (batch_norm_inference), as in eval mode too. The copy of the loss
/// is the program's loss ("loss@eval"); the copy of what the loss reads is its output, named
/// "logits" (softmax cross-entropy) or "predictions" (mse) when an op writes it (when the loss
/// reads a dropout's output, the output is the copy of the dropout's input, under its own name).
/// Sets graph.eval_ops, eval_loss and outputs. Throws CompileError when |forward| has no loss op
/// or its loss reads an input or parameter directly.
void append_eval_program(Graph& graph, const std::vector<Op>& forward);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_EVAL_PROGRAM_H_
