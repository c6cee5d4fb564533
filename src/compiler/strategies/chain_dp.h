// The budget strategy's optimiser: on a chain of stages, the checkpoint schedule that
// recomputes the fewest FLOPs while its modelled memory fits a budget (exact dynamic
// programming over Pareto fronts, in the spirit of Beaumont et al.'s heterogeneous chains).
//
// Model. Stage i produces activations of act[i] bytes (out[i] of them its output) and costs
// cost[i] FLOPs. Each stage is either kept (all its activations stay from forward to backward)
// or recomputed. A checkpoint may follow a recomputed stage (its output is kept). Maximal runs
// of recomputed stages between kept stages and checkpoints are segments; each is recomputed
// once, holding all its activations. The last stage is always kept.
//   memory = sum(act of kept) + sum(out of checkpointed) + max over segments(sum of act)
//   cost   = sum(cost of recomputed stages)
#ifndef REMAT_COMPILER_STRATEGIES_CHAIN_DP_H_
#define REMAT_COMPILER_STRATEGIES_CHAIN_DP_H_

#include <stdint.h>

#include <vector>

namespace remat {
namespace compiler {

/// One stage of a chain.
struct ChainStage {
  uint64_t act;  ///< Bytes of every activation the stage produces that backward reads.
  uint64_t out;  ///< Bytes of the stage's output (the split tensor to the next stage).
  double cost;   ///< FLOPs to recompute the stage.
};

/// A schedule for a chain and its modelled figures.
struct ChainSchedule {
  bool feasible = false;
  std::vector<uint8_t> kept;        ///< Per stage: 1 = kept.
  std::vector<uint8_t> checkpoint;  ///< Per stage: 1 = its output is a checkpoint.
  uint64_t memory = 0;              ///< Modelled bytes.
  double cost = 0;                  ///< Modelled recomputed FLOPs.
};

/// Modelled memory of |s| on |stages|.
uint64_t chain_memory(const std::vector<ChainStage>& stages, const ChainSchedule& s);

/// Modelled recomputed FLOPs of |s| on |stages|.
double chain_cost(const std::vector<ChainStage>& stages, const ChainSchedule& s);

/// The schedule of least cost whose memory is at most |budget| (ties: least memory); not
/// feasible when none fits. Exact while each Pareto front stays under its cap of 256 entries
/// (strategies/chain_dp.cc); time grows with the fourth power of the stage count.
ChainSchedule solve_chain(const std::vector<ChainStage>& stages, uint64_t budget);

/// The same answer by trying every schedule (3^(n-1) of them): for tests on short chains.
ChainSchedule brute_force_chain(const std::vector<ChainStage>& stages, uint64_t budget);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_CHAIN_DP_H_
