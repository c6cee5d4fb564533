// The `budget` strategy: the schedule that recomputes the fewest FLOPs within an arena budget.
#ifndef REMAT_COMPILER_BUDGET_STRATEGY_H_
#define REMAT_COMPILER_BUDGET_STRATEGY_H_

#include <stdint.h>

#include <vector>

#include "compiler/chain_dp.h"
#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// A graph's split points as a chain of stages for chain_dp: stage k holds the forward ops after
/// split point k-1 up to the one that makes split point k (the last runs to the end of the
/// forward pass), neighbouring stages merged into at most max_stages groups.
struct Chain {
  std::vector<ChainStage> stages;         ///< act: bytes of the candidates a stage makes; cost: its FLOPs.
  std::vector<std::vector<int>> members;  ///< The candidates each stage makes.
  std::vector<int> output;                ///< Each stage's last split point, or -1.

  /// The checkpoints of |s|: every member of a kept stage, the output of a checkpointed one.
  std::vector<int> checkpoints(const ChainSchedule& s) const;
};

/// The chain of |graph|'s split points over |candidates| (checkpoint_candidates()).
Chain split_point_chain(const Graph& graph, size_t forward_ops, const std::vector<int>& candidates, size_t max_stages);

/// Checkpoints for a planned arena of at most |budget| bytes with the fewest recomputed FLOPs.
/// The graph's split points make a chain of stages; chain_dp's exact dynamic program chooses
/// which stages to keep and which to recompute (chains of more than 32 stages are first merged
/// into 32), and every candidate is then planned for real, so the arena is exact. The
/// candidates also include `none`, `sqrt` and the split points' regular schedules
/// (split_point_schedules.h: `splits`, every k-th split point, whole stages kept), so the result
/// never recomputes more than any of them that fits: the chain model misjudges the real arena,
/// and on a transformer its picks alone can recompute a quarter more than keeping every other
/// split point. On graphs with at most 64 candidate tensors, a local search with the real
/// planner then improves candidates (one checkpoint more or fewer, or swapped), from every
/// candidate that fits and from the smallest arena found shrunk the same way, and the best result
/// wins. Throws CompileError, with the smallest arena found, when nothing fits.
std::vector<int> budget_checkpoints(const Graph& graph, size_t forward_ops, uint64_t budget, uint32_t alignment);

/// Checkpoint sets chain_dp picks on the graph's split-point chain (as budget_checkpoints()
/// builds it) at |count| modelled budgets, 2^(-j/2) of the chain's total activation bytes for
/// j = 1..count, distinct ones only, in that order: budget-independent schedules for `auto`.
std::vector<std::vector<int>> chain_schedules(const Graph& graph, size_t forward_ops, size_t count);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_BUDGET_STRATEGY_H_
