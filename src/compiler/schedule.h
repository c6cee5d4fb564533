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
/// strategies/sqrt.h's and strategies/budget.h's. Throws CompileError for an unknown strategy, or
/// an unknown or unsuitable name (the message lists valid candidates).
std::vector<int> choose_checkpoints(const Graph& graph, size_t forward_ops,
                                    const std::string& strategy);

/// Rewrites |graph| so that the ops after the first |forward_ops| (backward and updates) read
/// only |checkpoints|, inputs, parameters, activations of the last segment and recomputed
/// copies, which are inserted just before their first reader, one segment at a time.
/// Recomputed ops are exact copies of forward ops (same code, attributes and input values).
///
/// |nested| (nested recomputation): further segment bounds that are not kept from the forward
/// pass, in levels, the coarsest first. When the backward pass first needs one, a sweep
/// recomputes it from what is at hand and holds the nested checkpoints it passes that have no
/// coarser one between them and it (so the coarse ones of a whole segment, the fine ones of the
/// part being differentiated); each is held until its own segment is done. One small segment's
/// working set is then live at a time instead of a whole one between checkpoints, and the ops
/// between pay a recomputation per level. Tensors that are also in |checkpoints| are checkpoints.
void apply_recompute(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints,
                     const std::vector<std::vector<int>>& nested = {});

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_SCHEDULE_H_
