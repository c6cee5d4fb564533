// Budget strategy: chain DP over the graph's split points, verified and (on small graphs)
// improved by local search with the real planner.
#include "compiler/strategies/budget.h"

#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "compiler/schedule.h"
#include "compiler/strategies/chain_dp.h"
#include "compiler/strategies/schedule_candidate.h"
#include "compiler/strategies/split_point_chain.h"
#include "compiler/strategies/split_point_schedules.h"
#include "compiler/strategies/sqrt.h"

namespace remat {
namespace compiler {
namespace {

constexpr size_t kMaxStages = 32;
constexpr int kRefinements = 10;
// Local search runs on graphs with at most this many checkpoint candidates (a pass plans the
// graph once per candidate; on a 24-layer transformer, ~500 candidates, it would take a minute),
// and tries swaps (one checkpoint out, another in: candidates^2 / 4 plans) on at most
// kMaxSwapCandidates. Larger graphs keep the chain DP's pick.
constexpr size_t kMaxLocalSearchCandidates = 64;
constexpr size_t kMaxSwapCandidates = 40;

// Schedules compared by recomputed FLOPs, then arena (to fit a budget).
bool fewer_flops(const ScheduleCandidate& a, const ScheduleCandidate& b) {
  return a.recomputed < b.recomputed || (a.recomputed == b.recomputed && a.arena < b.arena);
}

// Schedules compared by arena, then fewer checkpoints (so that the search crosses plateaus
// where one checkpoint less does not yet lower the arena), to find one that fits at all.
bool smaller_arena(const ScheduleCandidate& a, const ScheduleCandidate& b) {
  return a.arena < b.arena || (a.arena == b.arena && a.checkpoints.size() < b.checkpoints.size());
}

// Improves |start| by local search with the real planner: keep one more candidate or one
// fewer, or (on small graphs) swap one kept for one not kept, while the arena stays within
// |budget| and |better| prefers the result; until no move improves. The chain model leaves out
// what the planner sees (gradients, temporaries, fragmentation), so its pick is a start.
template <typename Better>
ScheduleCandidate improve_locally(const Graph& graph, size_t forward_ops,
                                  const std::vector<int>& candidates, ScheduleCandidate start,
                                  uint64_t budget, uint32_t alignment, Better better) {
  ScheduleCandidate current = std::move(start);
  const bool swaps = candidates.size() <= kMaxSwapCandidates;
  for (bool improved = true; improved;) {
    improved = false;
    auto consider = [&](std::vector<int> checkpoints) {
      std::sort(checkpoints.begin(), checkpoints.end());
      ScheduleCandidate c = plan_candidate(graph, forward_ops, std::move(checkpoints), alignment);
      if (c.arena <= budget && better(c, current)) {
        current = std::move(c);
        improved = true;
      }
    };
    for (int t : candidates) {
      std::vector<int> next = current.checkpoints;
      const auto at = std::find(next.begin(), next.end(), t);
      if (at == next.end())
        next.push_back(t);
      else
        next.erase(at);
      consider(std::move(next));
      if (improved) break;
    }
    if (improved || !swaps) continue;
    const std::vector<int> kept = current.checkpoints;
    for (size_t i = 0; i < kept.size() && !improved; ++i) {
      for (int t : candidates) {
        if (std::find(kept.begin(), kept.end(), t) != kept.end()) continue;
        std::vector<int> next = kept;
        next[i] = t;
        consider(std::move(next));
        if (improved) break;
      }
    }
  }
  return current;
}

}  // namespace

std::vector<std::vector<int>> chain_schedules(const Graph& graph, size_t forward_ops,
                                              size_t count) {
  const Chain chain =
      split_point_chain(graph, forward_ops, checkpoint_candidates(graph, forward_ops), kMaxStages);
  uint64_t total = 0;
  for (const ChainStage& s : chain.stages) total += s.act;
  std::vector<std::vector<int>> out;
  for (size_t j = 1; j <= count; ++j) {
    const ChainSchedule s =
        solve_chain(chain.stages, static_cast<uint64_t>(static_cast<double>(total) *
                                                        std::exp2(-0.5 * static_cast<double>(j))));
    if (!s.feasible) break;
    std::vector<int> chosen = chain.checkpoints(s);
    if (std::find(out.begin(), out.end(), chosen) == out.end()) out.push_back(std::move(chosen));
  }
  return out;
}

std::vector<int> budget_checkpoints(const Graph& graph, size_t forward_ops, uint64_t budget,
                                    uint32_t alignment) {
  const std::vector<int> candidates = checkpoint_candidates(graph, forward_ops);
  const Chain chain = split_point_chain(graph, forward_ops, candidates, kMaxStages);
  std::vector<ScheduleCandidate> pool;
  pool.push_back(plan_candidate(graph, forward_ops, candidates, alignment));
  if (pool[0].arena <= budget) return candidates;  // everything fits: nothing to recompute
  pool.push_back(plan_candidate(graph, forward_ops, sqrt_checkpoints(graph, forward_ops, alignment),
                                alignment));
  // The chain model leaves out gradients, inputs and backward temporaries, so the real arena
  // differs from the modelled memory: bisect on the model's budget for the largest one whose
  // schedule, planned for real, fits.
  uint64_t low = 0, high = budget * 4 + 1;
  for (int round = 0; round < kRefinements && low + 1 < high; ++round) {
    const uint64_t model_budget = low + (high - low) / 2;
    const ChainSchedule s = solve_chain(chain.stages, model_budget);
    if (!s.feasible) {
      low = model_budget;
      continue;
    }
    pool.push_back(plan_candidate(graph, forward_ops, chain.checkpoints(s), alignment));
    if (pool.back().arena <= budget) {
      low = model_budget;
    } else {
      high = model_budget;
    }
  }
  // The split points' regular schedules too (every k-th, whole stages kept, sqrt's): the chain
  // model misjudges the real arena, and on a transformer its picks recompute more than these.
  // Two of them join the pool: the one with the fewest FLOPs that fits (a local search start)
  // and the smallest (the start of the shrinking search, and the error's figure). Keeping
  // nothing (an empty set) is one of them too.
  std::vector<std::vector<int>> family = split_point_schedules(graph, forward_ops);
  std::sort(family.begin(), family.end());
  family.erase(std::unique(family.begin(), family.end()), family.end());
  std::vector<int> every_candidate = candidates;
  std::sort(every_candidate.begin(), every_candidate.end());
  std::optional<ScheduleCandidate> smallest_regular, best_regular;
  for (std::vector<int>& checkpoints : family) {
    if (checkpoints == every_candidate) continue;
    ScheduleCandidate c = plan_candidate(graph, forward_ops, std::move(checkpoints), alignment);
    if (!smallest_regular || smaller_arena(c, *smallest_regular)) smallest_regular = c;
    if (c.arena <= budget && (!best_regular || fewer_flops(c, *best_regular))) best_regular = c;
  }
  if (best_regular) pool.push_back(std::move(*best_regular));
  if (smallest_regular) pool.push_back(std::move(*smallest_regular));
  const ScheduleCandidate* best = nullptr;
  const ScheduleCandidate* smallest = &pool[0];
  for (const ScheduleCandidate& c : pool) {
    if (c.arena < smallest->arena) smallest = &c;
    if (c.arena > budget) continue;
    if (best == nullptr || fewer_flops(c, *best)) best = &c;
  }
  if (candidates.size() > kMaxLocalSearchCandidates) {
    if (best == nullptr) {
      throw CompileError("arena budget " + std::to_string(budget) +
                         " bytes is too small: the smallest schedule found needs an arena of " +
                         std::to_string(smallest->arena) + " bytes");
    }
    return best->checkpoints;
  }
  // Local search from several starts, the best result wins: every schedule in the pool that
  // fits, and the smallest one shrunk further. One start alone can sit in a local optimum that
  // a move of one checkpoint does not leave.
  std::vector<ScheduleCandidate> starts;
  for (const ScheduleCandidate& c : pool) {
    if (c.arena <= budget) starts.push_back(c);
  }
  ScheduleCandidate shrunk = improve_locally(graph, forward_ops, candidates, *smallest, UINT64_MAX,
                                             alignment, smaller_arena);
  if (shrunk.arena <= budget) {
    starts.push_back(std::move(shrunk));
  } else if (starts.empty()) {
    throw CompileError("arena budget " + std::to_string(budget) +
                       " bytes is too small: the smallest schedule found needs an arena of " +
                       std::to_string(shrunk.arena) + " bytes");
  }
  std::vector<std::vector<int>> tried;
  ScheduleCandidate result;
  for (ScheduleCandidate& start : starts) {
    std::sort(start.checkpoints.begin(), start.checkpoints.end());
    if (std::find(tried.begin(), tried.end(), start.checkpoints) != tried.end()) continue;
    tried.push_back(start.checkpoints);
    ScheduleCandidate c = improve_locally(graph, forward_ops, candidates, std::move(start), budget,
                                          alignment, fewer_flops);
    if (tried.size() == 1 || fewer_flops(c, result)) result = std::move(c);
  }
  return result.checkpoints;
}

}  // namespace compiler
}  // namespace remat
