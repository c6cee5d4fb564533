// The split points' chain of stages (split_point_chain.h).
#include "compiler/strategies/split_point_chain.h"

#include <algorithm>

#include "compiler/schedule.h"

namespace remat {
namespace compiler {

std::vector<int> Chain::checkpoints(const ChainSchedule& s) const {
  std::vector<int> chosen;
  for (size_t g = 0; g < stages.size(); ++g) {
    if (s.kept[g]) chosen.insert(chosen.end(), members[g].begin(), members[g].end());
    if (!s.kept[g] && s.checkpoint[g] && output[g] >= 0) chosen.push_back(output[g]);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

Chain split_point_chain(const Graph& graph, size_t forward_ops, const std::vector<int>& candidates,
                        size_t max_stages) {
  const std::vector<int> splits = split_points(graph, forward_ops);
  std::vector<int> producer(graph.tensors.size(), -1);
  for (size_t i = 0; i < forward_ops; ++i) {
    for (int t : graph.ops[i].outputs) producer[t] = static_cast<int>(i);
  }
  // Stage k holds the forward ops after split k-1 up to the producer of split k; the last
  // stage runs to the end of the forward pass. Stages are merged into at most max_stages groups.
  const size_t fine_stages = splits.size() + 1;
  const size_t groups = std::min(fine_stages, max_stages);
  auto group_of_stage = [&](size_t stage) { return stage * groups / fine_stages; };
  std::vector<int> stage_of_op(forward_ops, 0);
  for (size_t i = 0, stage = 0; i < forward_ops; ++i) {
    stage_of_op[i] = static_cast<int>(group_of_stage(stage));
    if (stage < splits.size() && producer[splits[stage]] == static_cast<int>(i)) ++stage;
  }
  Chain chain;
  chain.stages.assign(groups, ChainStage{0, 0, 0.0});
  chain.members.resize(groups);
  chain.output.assign(groups, -1);
  for (size_t i = 0; i < forward_ops; ++i) chain.stages[stage_of_op[i]].cost += graph.ops[i].flops;
  for (int t : candidates) {
    const int g = stage_of_op[producer[t]];
    chain.stages[g].act += graph.tensors[t].bytes();
    chain.members[g].push_back(t);
  }
  for (int t : splits)
    chain.output[stage_of_op[producer[t]]] = t;  // the last split inside a group is its output
  for (size_t g = 0; g < groups; ++g) {
    if (chain.output[g] >= 0) chain.stages[g].out = graph.tensors[chain.output[g]].bytes();
  }
  return chain;
}

}  // namespace compiler
}  // namespace remat
