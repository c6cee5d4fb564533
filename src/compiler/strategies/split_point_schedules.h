// The schedules built from a graph's split points, without nesting: the family that `auto`
// searches (with nested variants of its own) and that `budget` adds to its chain DP's picks.
#ifndef REMAT_COMPILER_STRATEGIES_SPLIT_POINT_SCHEDULES_H_
#define REMAT_COMPILER_STRATEGIES_SPLIT_POINT_SCHEDULES_H_

#include <stddef.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Every |k|-th of |list| (in forward order), the k-th first.
std::vector<int> every_kth(const std::vector<int>& list, size_t k);

/// Checkpoint sets, each sorted (tensor ids grow in the order the forward pass makes
/// activations, so sorted is forward order), possibly repeated: every candidate (`none`),
/// `selective`, every split point (`splits`), `sqrt`'s modelled schedules (the best first), every
/// 2nd to 4th split point, and the split points and `sqrt`'s best each with whole stages kept
/// in the order of the FLOPs they save per byte they hold (1, 2, 4, ... stages).
std::vector<std::vector<int>> split_point_schedules(const Graph& graph, size_t forward_ops);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_SPLIT_POINT_SCHEDULES_H_
