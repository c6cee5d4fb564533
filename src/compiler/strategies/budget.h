// The `budget` strategy: the schedule that recomputes the fewest FLOPs within an arena budget.
#ifndef REMAT_COMPILER_STRATEGIES_BUDGET_H_
#define REMAT_COMPILER_STRATEGIES_BUDGET_H_

#include <stdint.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Checkpoints for a planned arena of at most |budget| bytes with the fewest recomputed FLOPs.
/// The graph's split points make a chain of stages; chain_dp's exact dynamic program chooses
/// which stages to keep and which to recompute (chains of more than 32 stages are first merged
/// into 32), and every candidate is then planned for real, so the arena is exact. The
/// candidates also include `none`, `sqrt` and the split points' regular schedules
/// (strategies/split_point_schedules.h: `splits`, every k-th split point, whole stages kept), so
/// the result never recomputes more than any of them that fits: the chain model misjudges the real
/// arena, and on a transformer its picks alone can recompute a quarter more than keeping every
/// other split point. On graphs with at most 64 candidate tensors, a local search with the real
/// planner then improves candidates (one checkpoint more or fewer, or swapped), from every
/// candidate that fits and from the smallest arena found shrunk the same way, and the best result
/// wins. Throws CompileError, with the smallest arena found, when nothing fits.
std::vector<int> budget_checkpoints(const Graph& graph, size_t forward_ops, uint64_t budget,
                                    uint32_t alignment);

/// Checkpoint sets chain_dp picks on the graph's split-point chain (as budget_checkpoints()
/// builds it) at |count| modelled budgets, 2^(-j/2) of the chain's total activation bytes for
/// j = 1..count, distinct ones only, in that order: budget-independent schedules for `auto`.
std::vector<std::vector<int>> chain_schedules(const Graph& graph, size_t forward_ops, size_t count);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_BUDGET_H_
