// The unnested schedules built from the split points (strategies/split_point_schedules.h).
#include "compiler/strategies/split_point_schedules.h"

#include <stdint.h>

#include <algorithm>

#include "compiler/schedule.h"
#include "compiler/strategies/split_point_chain.h"
#include "compiler/strategies/sqrt.h"

namespace remat {
namespace compiler {
namespace {

std::vector<int> sorted_union(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

}  // namespace

std::vector<int> every_kth(const std::vector<int>& list, size_t k) {
  std::vector<int> out;
  for (size_t i = k - 1; i < list.size(); i += k) out.push_back(list[i]);
  return out;
}

std::vector<std::vector<int>> split_point_schedules(const Graph& g, size_t forward_ops) {
  std::vector<int> candidates = checkpoint_candidates(g, forward_ops);
  std::vector<int> splits = split_points(g, forward_ops);
  std::vector<std::vector<int>> sqrts = sqrt_schedules(g, forward_ops);
  std::vector<int> selective = choose_checkpoints(g, forward_ops, "selective");
  for (std::vector<int>* list : {&candidates, &splits, &selective})
    std::sort(list->begin(), list->end());
  for (std::vector<int>& list : sqrts) std::sort(list.begin(), list.end());
  const std::vector<int>& sqrt = sqrts.front();  // the best modelled
  std::vector<std::vector<int>> out = {candidates, selective, splits};
  out.insert(out.end(), sqrts.begin(), sqrts.end());
  for (size_t k = 2; k <= 4; ++k) out.push_back(every_kth(splits, k));

  // Stages between split points, ranked by the FLOPs keeping one whole saves per byte it holds.
  const Chain chain = split_point_chain(g, forward_ops, candidates, SIZE_MAX);
  std::vector<size_t> rank;
  for (size_t s = 0; s < chain.stages.size(); ++s) {
    if (chain.stages[s].act > 0) rank.push_back(s);
  }
  auto saved_per_byte = [&](size_t s) {
    return chain.stages[s].cost / static_cast<double>(chain.stages[s].act);
  };
  std::stable_sort(rank.begin(), rank.end(),
                   [&](size_t a, size_t b) { return saved_per_byte(a) > saved_per_byte(b); });
  for (const std::vector<int>* base : {static_cast<const std::vector<int>*>(&splits), &sqrt}) {
    std::vector<int> kept = *base;
    for (size_t j = 0, next = 1; j < rank.size(); ++j) {
      kept = sorted_union(kept, chain.members[rank[j]]);
      if (j + 1 == next) {
        out.push_back(kept);
        next *= 2;
      }
    }
  }
  return out;
}

}  // namespace compiler
}  // namespace remat
