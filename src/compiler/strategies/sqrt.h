// The `sqrt` strategy: Chen et al.'s memory-planning greedy over the graph's split points.
#ifndef REMAT_COMPILER_STRATEGIES_SQRT_H_
#define REMAT_COMPILER_STRATEGIES_SQRT_H_

#include <stdint.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Checkpoints among the split points by Chen et al. (2016, "Training Deep Nets with Sublinear
/// Memory Cost", Algorithm 3): walking the forward pass, a split point becomes a checkpoint once
/// the bytes the backward pass reads since the last checkpoint exceed a budget B. B runs over a
/// grid around the paper's sqrt(x * y), where x and y are the checkpoint bytes and the largest
/// segment with every split point kept; so segments are balanced by bytes, not by count (a
/// ResNet's first stage has 4x the bytes per block of its last). The schedules are ranked by a
/// chain model (checkpoints still held plus the segment being recomputed), as are Chen's evenly
/// spaced sqrt(n) split points; the best 4 and the evenly spaced ones are planned for real, and
/// the smallest arena wins, then the fewest recomputed FLOPs. On graphs of more than 100,000 ops
/// nothing is planned and the best modelled wins. No split points: no checkpoints.
std::vector<int> sqrt_checkpoints(const Graph& graph, size_t forward_ops, uint32_t alignment);

/// The schedules sqrt_checkpoints() plans for real, best modelled first, without planning them
/// (one empty schedule when the graph has no split points): the auto strategy plans them itself.
std::vector<std::vector<int>> sqrt_schedules(const Graph& graph, size_t forward_ops);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_SQRT_H_
