// Planning a checkpoint set for real, for the strategies that compare several.
#include "compiler/strategies/schedule_candidate.h"

#include <utility>

#include "compiler/planner.h"
#include "compiler/schedule.h"

namespace remat {
namespace compiler {

ScheduleCandidate plan_candidate(const Graph& graph, size_t forward_ops,
                                 std::vector<int> checkpoints, uint32_t alignment) {
  Graph copy = graph;
  apply_recompute(copy, forward_ops, checkpoints);
  ScheduleCandidate c;
  c.arena = plan_memory(copy, alignment).arena_size;
  for (const Op& op : copy.ops) c.recomputed += op.phase == Phase::kRecompute ? op.flops : 0.0;
  c.checkpoints = std::move(checkpoints);
  return c;
}

}  // namespace compiler
}  // namespace remat
