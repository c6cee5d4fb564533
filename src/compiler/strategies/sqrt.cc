// sqrt strategy: Chen et al.'s Algorithm 3 on a grid of budgets, the best planned for real,
// then (small graphs) a local search over single split points.
#include "compiler/strategies/sqrt.h"

#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "compiler/schedule.h"
#include "compiler/strategies/schedule_candidate.h"

namespace remat {
namespace compiler {
namespace {

// The grid of budgets: B* * 2^(j / 4) for j in [-kGridSteps, kGridSteps], from B* / 4 to 4 B*.
constexpr int kGridSteps = 8;
// How many of the greedy's distinct schedules, best modelled first, are planned for real (the
// model ranks them only roughly: the second often plans smallest). Each plan costs a rewrite and
// a memory plan: about 10 ms on BERT-Large, 0.5 s on a 10,000-layer mlp. Graphs of more than
// kLargeGraphOps ops plan none and take the best modelled, so that compile time stays linear.
constexpr size_t kPlannedSchedules = 4;
constexpr size_t kLargeGraphOps = 100000;
// Graphs with at most this many split points get a local search after the grid: each split
// point in turn is added to or dropped from the best schedule and kept where the planned arena
// falls, until no single change helps (at most kLocalSearchRounds passes). The grid's sets are
// budget-shaped; the planner's real peaks are not always, and small models show it most.
constexpr size_t kLocalSearchSplits = 32;
constexpr int kLocalSearchRounds = 4;

// The forward pass seen as Chen's chain: per forward op, the bytes of its outputs that the
// backward pass reads, and the split point it produces (or -1).
struct Walk {
  std::vector<uint64_t> bytes;
  std::vector<int> split;
};

Walk walk_forward(const Graph& g, size_t forward_ops) {
  Walk w{std::vector<uint64_t>(forward_ops, 0), std::vector<int>(forward_ops, -1)};
  std::vector<int> producer(g.tensors.size(), -1);
  for (size_t i = 0; i < forward_ops; ++i) {
    for (int t : g.ops[i].outputs) producer[t] = static_cast<int>(i);
  }
  for (int t : checkpoint_candidates(g, forward_ops)) w.bytes[producer[t]] += g.tensors[t].bytes();
  for (int t : split_points(g, forward_ops)) w.split[producer[t]] = t;
  return w;
}

// Algorithm 3's result: the checkpoints and the paper's x and y.
struct Greedy {
  std::vector<int> checkpoints;
  uint64_t checkpoint_bytes = 0;  // x
  uint64_t largest_segment = 0;   // y
};

// Algorithm 3: a split point past |budget| bytes since the last checkpoint becomes one.
Greedy greedy(const Graph& g, const Walk& w, uint64_t budget) {
  Greedy out;
  uint64_t segment = 0;
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    segment += w.bytes[i];
    if (w.split[i] < 0 || segment <= budget) continue;
    out.checkpoints.push_back(w.split[i]);
    out.checkpoint_bytes += g.tensors[w.split[i]].bytes();
    out.largest_segment = std::max(out.largest_segment, segment);
    segment = 0;
  }
  out.largest_segment = std::max(out.largest_segment, segment);
  return out;
}

// The chain model of a schedule's peak: while a segment is recomputed, the checkpoints before
// it are still held (the backward pass frees them as it passes them).
uint64_t modelled_peak(const Graph& g, const Walk& w, const std::vector<int>& chosen) {
  uint64_t held = 0, segment = 0, peak = 0;
  size_t next = 0;
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    segment += w.bytes[i];
    if (next < chosen.size() && w.split[i] == chosen[next]) {
      peak = std::max(peak, held + segment);
      held += g.tensors[chosen[next]].bytes();
      segment = 0;
      ++next;
    }
  }
  return std::max(peak, held + segment);
}

// Chen's evenly spaced variant: about sqrt(n) of the n split points, by count.
std::vector<int> evenly_spaced(const std::vector<int>& splits) {
  const size_t n = splits.size();
  const size_t k = static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(n))));
  std::vector<int> chosen;
  for (size_t j = 1; j <= k; ++j) {
    const size_t index = (j * n) / (k + 1);
    if (index < n && (chosen.empty() || chosen.back() != splits[index]))
      chosen.push_back(splits[index]);
  }
  return chosen;
}

}  // namespace

std::vector<std::vector<int>> sqrt_schedules(const Graph& graph, size_t forward_ops) {
  const std::vector<int> splits = split_points(graph, forward_ops);
  if (splits.empty()) return {{}};
  const Walk walk = walk_forward(graph, forward_ops);
  const Greedy every = greedy(graph, walk, 0);  // every split point: the paper's x and y
  const double center = std::sqrt(static_cast<double>(every.checkpoint_bytes) *
                                  static_cast<double>(every.largest_segment));

  const std::vector<int> even = evenly_spaced(splits);
  std::vector<std::pair<uint64_t, std::vector<int>>> modelled;  // (modelled peak, checkpoints)
  modelled.emplace_back(modelled_peak(graph, walk, even), even);
  for (int j = -kGridSteps; j <= kGridSteps; ++j) {
    const auto budget = static_cast<uint64_t>(center * std::exp2(j / 4.0));
    std::vector<int> chosen = greedy(graph, walk, budget).checkpoints;
    const bool seen = std::any_of(modelled.begin(), modelled.end(),
                                  [&](const auto& m) { return m.second == chosen; });
    if (!seen) modelled.emplace_back(modelled_peak(graph, walk, chosen), std::move(chosen));
  }
  std::stable_sort(modelled.begin(), modelled.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<int>> out;
  for (size_t k = 0; k < modelled.size() && k < kPlannedSchedules; ++k)
    out.push_back(modelled[k].second);
  if (std::find(out.begin(), out.end(), even) == out.end()) out.push_back(even);
  return out;
}

std::vector<int> sqrt_checkpoints(const Graph& graph, size_t forward_ops, uint32_t alignment) {
  const std::vector<std::vector<int>> planned = sqrt_schedules(graph, forward_ops);
  if (planned.size() == 1 || graph.ops.size() > kLargeGraphOps) return planned.front();
  auto better = [](const ScheduleCandidate& c, const ScheduleCandidate& best) {
    return c.arena < best.arena || (c.arena == best.arena && c.recomputed < best.recomputed);
  };
  ScheduleCandidate best = plan_candidate(graph, forward_ops, planned[0], alignment);
  for (size_t k = 1; k < planned.size(); ++k) {
    ScheduleCandidate c = plan_candidate(graph, forward_ops, planned[k], alignment);
    if (better(c, best)) best = std::move(c);
  }
  const std::vector<int> splits = split_points(graph, forward_ops);
  if (splits.size() > kLocalSearchSplits) return best.checkpoints;
  for (int round = 0; round < kLocalSearchRounds; ++round) {
    bool improved = false;
    for (int split : splits) {
      std::vector<int> changed = best.checkpoints;
      const auto at = std::find(changed.begin(), changed.end(), split);
      if (at != changed.end()) {
        changed.erase(at);
      } else {
        changed.insert(std::upper_bound(changed.begin(), changed.end(), split), split);
      }
      ScheduleCandidate c = plan_candidate(graph, forward_ops, std::move(changed), alignment);
      if (better(c, best)) {
        best = std::move(c);
        improved = true;
      }
    }
    if (!improved) break;
  }
  return best.checkpoints;
}

}  // namespace compiler
}  // namespace remat
