// A graph's split points as a chain of stages: the model chain_dp optimises, which `budget`
// and the split points' regular schedules both build on.
#ifndef REMAT_COMPILER_STRATEGIES_SPLIT_POINT_CHAIN_H_
#define REMAT_COMPILER_STRATEGIES_SPLIT_POINT_CHAIN_H_

#include <stddef.h>

#include <vector>

#include "compiler/graph.h"
#include "compiler/strategies/chain_dp.h"

namespace remat {
namespace compiler {

/// A graph's split points as a chain of stages for chain_dp: stage k holds the forward ops after
/// split point k-1 up to the one that makes split point k (the last runs to the end of the
/// forward pass), neighbouring stages merged into at most max_stages groups.
struct Chain {
  std::vector<ChainStage> stages;  ///< act: bytes of the candidates a stage makes; cost: its FLOPs.
  std::vector<std::vector<int>> members;  ///< The candidates each stage makes.
  std::vector<int> output;                ///< Each stage's last split point, or -1.

  /// The checkpoints of |s|: every member of a kept stage, the output of a checkpointed one.
  std::vector<int> checkpoints(const ChainSchedule& s) const;
};

/// The chain of |graph|'s split points over its first |forward_ops| ops (the forward pass),
/// with |candidates| (checkpoint_candidates(): tensors those ops produce) as the stages'
/// members, neighbouring stages merged into at most |max_stages| (at least 1) groups.
Chain split_point_chain(const Graph& graph, size_t forward_ops, const std::vector<int>& candidates,
                        size_t max_stages);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_SPLIT_POINT_CHAIN_H_
