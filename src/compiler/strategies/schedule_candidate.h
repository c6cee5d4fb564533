// A checkpoint set planned for real: the arena the runtime would bind and the FLOPs it
// recomputes. The strategies that search (sqrt, budget) compare candidates by these figures.
#ifndef REMAT_COMPILER_STRATEGIES_SCHEDULE_CANDIDATE_H_
#define REMAT_COMPILER_STRATEGIES_SCHEDULE_CANDIDATE_H_

#include <stdint.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// A checkpoint set and its planned figures.
struct ScheduleCandidate {
  std::vector<int> checkpoints;  ///< Tensor ids kept from forward to backward.
  uint64_t arena = 0;            ///< Planned arena bytes with these checkpoints.
  double recomputed = 0;         ///< FLOPs of the recompute ops the rewrite inserts.
};

/// Rewrites a copy of |graph| with |checkpoints| (apply_recompute) and plans its memory at
/// |alignment|; |graph| itself is not changed.
ScheduleCandidate plan_candidate(const Graph& graph, size_t forward_ops,
                                 std::vector<int> checkpoints, uint32_t alignment);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_SCHEDULE_CANDIDATE_H_
