// The `auto` strategy: for each checkpoint candidate keep, recompute or spill, chosen together
// for the fastest predicted step that fits the budgets, every schedule planned for real.
//
// Predicted step time (the cost model): every op's FLOPs over the compute rate, recomputed
// ones included, plus the copy time compute cannot hide (strategies/copy_timeline.h). A schedule
// fits when its planned arena is within the arena budget, its arena + persistent bytes within the
// device budget, and its host spill region within the host budget.
//
// Search. The schedules considered do not depend on the budgets: on graphs of at most
// kExhaustiveCandidates candidates, every keep/recompute/spill assignment (spills placed all
// hidden, all early-free or all tight); on every graph, a family built from the split points
// (none, selective, splits, sqrt's best modelled schedules, every k-th split point, stages kept
// whole by FLOPs per byte, the chain DP's picks at fixed modelled budgets, and nested
// recomputation: fewer checkpoints kept, the split points between them recomputed per segment
// and held in two levels). With a device budget, a schedule that does not fit is also tried with
// a prefix of its checkpoints spilled (spill_order(), one placement for all; everything spilled
// first, then a bisection for the shortest prefix that fits). The fastest fitting schedule wins
// (ties: fewer device bytes). Since the set of schedules is the same for every budget, and
// spilling one more checkpoint never shortens the modelled step, a larger budget never gives a
// slower predicted step (docs/strategies.md).
#ifndef REMAT_COMPILER_STRATEGIES_AUTO_H_
#define REMAT_COMPILER_STRATEGIES_AUTO_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "compiler/graph.h"
#include "compiler/strategies/spill.h"

namespace remat {
namespace compiler {

/// Graphs with at most this many checkpoint candidates are searched exhaustively.
constexpr size_t kExhaustiveCandidates = 7;

/// The budgets and the cost model of an auto search.
struct AutoOptions {
  uint64_t arena_budget = 0;  ///< Planned arena bytes at most this (0: no such limit).
  uint64_t device_budget =
      0;  ///< Arena + persistent bytes at most this; spilling allowed (0: none).
  uint64_t host_budget = UINT64_MAX;  ///< Host spill bytes at most this (0: no spilling).
  /// Cost model and alignment (its device_budget is the search's own).
  SpillOptions cost;
  /// Return the fitting schedule with the fewest device bytes instead of the fastest (every
  /// schedule is planned): a max-batch search asks whether anything fits, and how much room
  /// is left.
  bool smallest = false;
};

/// The schedule chosen, applied.
struct AutoSchedule {
  Graph graph;  ///< The input graph rewritten: recompute, nested sweeps and spills.
  std::vector<int> checkpoints;  ///< Kept from forward to backward (spilled ones included).
  std::vector<int> nested;  ///< Nested checkpoints, every level: recomputed per segment, then held.
  std::vector<int> spilled;                      ///< Checkpoints copied to host and back.
  uint64_t arena = 0, persistent = 0, host = 0;  ///< Planned bytes of the step.
  double predicted_seconds = 0;                  ///< Modelled step: compute plus copy stalls.
  double copy_seconds = 0, hidden_seconds = 0;   ///< Modelled copy time, and what compute hides.
  size_t planned = 0;                            ///< Schedules planned for real by the search.
  bool exhaustive = false;                       ///< Every assignment was tried.
};

/// Thrown by auto_schedule() when no schedule fits: the message says why, and the smallest
/// device bytes found tell a max-batch search how far off the budget is.
class NoScheduleFits : public CompileError {
 public:
  NoScheduleFits(const std::string& message, uint64_t smallest_device)
      : CompileError(message), smallest_device(smallest_device) {}
  /// Arena + persistent bytes of the smallest schedule planned (compile() adds the widening
  /// workspace, as device budgets count it).
  uint64_t smallest_device;
};

/// Modelled seconds of one step of |graph| (compute + stalls; strategies/copy_timeline.h) under
/// |cost|.
double predicted_step_seconds(const Graph& graph, const SpillOptions& cost);

/// Searches schedules of |graph| (forward ops first, |forward_ops| of them, then backward and
/// updates, not yet rewritten) and returns the fastest that fits |options|. Throws
/// CompileError naming the budget and the smallest schedule found when none fits, or when no
/// budget is given.
AutoSchedule auto_schedule(const Graph& graph, size_t forward_ops, const AutoOptions& options);

/// Marks |checkpoints| that are plain activations as checkpoints (Role::kCheckpoint): what a
/// strategy keeps from forward to backward is a checkpoint in the plan.
void mark_checkpoints(Graph& graph, const std::vector<int>& checkpoints);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_AUTO_H_
