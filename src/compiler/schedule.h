// Checkpoint strategies and the recompute rewrite: which forward activations to keep, and
// the recomputed copies that the backward pass reads instead of the others.
#ifndef REMAT_COMPILER_SCHEDULE_H_
#define REMAT_COMPILER_SCHEDULE_H_

#include <string>
#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Forward activations that may serve as checkpoints: produced by a forward op (index below
/// |forward_ops|) and read by the backward pass.
std::vector<int> checkpoint_candidates(const Graph& graph, size_t forward_ops);

/// Split points: forward activations that are, right after they are produced, the only
/// activation later forward ops still read (block outputs, in forward order).
std::vector<int> split_points(const Graph& graph, size_t forward_ops);

/// Checkpoints for |strategy|: "none" (every activation: nothing is recomputed), "splits"
/// (every split point: the smallest segments, and so the most checkpoints to spill),
/// "selective" or "manual:NAME,NAME". The strategies that plan candidates for real are
/// sqrt_strategy.h's and budget_strategy.h's. Throws CompileError for an unknown strategy, or an
/// unknown or unsuitable name (the message lists valid candidates).
std::vector<int> choose_checkpoints(const Graph& graph, size_t forward_ops, const std::string& strategy);

/// Rewrites |graph| so that the ops after the first |forward_ops| (backward and updates) read
/// only |checkpoints|, inputs, parameters, activations of the last segment and recomputed
/// copies, which are inserted just before their first reader, one segment at a time.
/// Recomputed ops are exact copies of forward ops (same code, attributes and input values).
void apply_recompute(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_SCHEDULE_H_
