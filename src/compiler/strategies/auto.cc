// The auto strategy's search: a budget-independent set of schedules, tried fastest first.
#include "compiler/strategies/auto.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "compiler/strategies/budget.h"
#include "compiler/strategies/copy_timeline.h"
#include "compiler/planner.h"
#include "compiler/schedule.h"
#include "compiler/strategies/split_point_schedules.h"
#include "compiler/strategies/sqrt.h"

namespace remat {
namespace compiler {
namespace {

// Chain DP schedules in the family: modelled budgets from 1/sqrt(2) down to 1/2^4 of the chain's
// activation bytes.
constexpr size_t kChainSchedules = 8;

// A schedule before spilling: what is kept, and what is nested.
struct Member {
  std::vector<int> checkpoints;
  std::vector<std::vector<int>> nested;  // levels, the coarsest first
  bool operator<(const Member& o) const {
    return checkpoints != o.checkpoints ? checkpoints < o.checkpoints : nested < o.nested;
  }
};

std::vector<int> minus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  for (int t : a) {
    if (std::find(b.begin(), b.end(), t) == b.end()) out.push_back(t);
  }
  return out;
}

// The split points' schedules (strategies/split_point_schedules.h) and their nested variants.
std::vector<Member> split_point_family(const Graph& g, size_t forward_ops) {
  std::vector<Member> out;
  for (std::vector<int>& list : split_point_schedules(g, forward_ops))
    out.push_back({std::move(list), {}});
  std::vector<int> splits = split_points(g, forward_ops);
  std::vector<int> sqrt = sqrt_schedules(g, forward_ops).front();  // the best modelled
  std::sort(splits.begin(), splits.end());
  std::sort(sqrt.begin(), sqrt.end());

  // Nested recomputation: fewer checkpoints kept; sqrt's others and the remaining split points
  // recomputed per segment and held as two levels, so that one stage's working set is live at
  // a time.
  const std::vector<int> fine = minus(splits, sqrt);
  for (size_t k = 1; k <= 6; ++k) {
    const std::vector<int> outer = every_kth(sqrt, k);
    const std::vector<int> coarse = minus(sqrt, outer);
    if (k > 1) out.push_back({outer, {coarse}});
    out.push_back({outer, {coarse, fine}});
  }
  return out;
}

// Every subset of |candidates| kept (the exhaustive search; spills are tried per subset).
std::vector<Member> every_subset(const std::vector<int>& candidates) {
  std::vector<Member> out;
  for (uint32_t mask = 0; mask < (1u << candidates.size()); ++mask) {
    Member m;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (mask & (1u << i)) m.checkpoints.push_back(candidates[i]);
    }
    out.push_back(std::move(m));
  }
  return out;
}

class Search {
 public:
  Search(const Graph& graph, size_t forward_ops, const AutoOptions& options)
      : graph_(graph),
        forward_ops_(forward_ops),
        options_(options),
        candidates_(checkpoint_candidates(graph, forward_ops)) {
    std::sort(candidates_.begin(), candidates_.end());
  }

  AutoSchedule run() {
    const bool exhaustive = candidates_.size() <= kExhaustiveCandidates;
    std::vector<Member> members = split_point_family(graph_, forward_ops_);
    // The chain DP's schedules between `none` and `sqrt` (the fewest recomputed FLOPs for their
    // modelled memory). Never the smallest schedules, so a max-batch probe skips them.
    if (!options_.smallest) {
      for (std::vector<int>& c : chain_schedules(graph_, forward_ops_, kChainSchedules))
        members.push_back({std::move(c), {}});
    }
    if (exhaustive) {
      for (Member& m : every_subset(candidates_)) members.push_back(std::move(m));
    }
    std::set<Member> unique;
    struct Ranked {
      double seconds;  // compute alone
      Member member;
      Graph graph;  // rewritten
    };
    std::vector<Ranked> ranked;
    for (Member& m : members) {
      std::sort(m.checkpoints.begin(), m.checkpoints.end());
      for (std::vector<int>& level : m.nested) std::sort(level.begin(), level.end());
      if (!unique.insert(m).second) continue;
      Graph g = rewrite(m);
      const double seconds = predicted_step_seconds(g, options_.cost);
      ranked.push_back(Ranked{seconds, std::move(m), std::move(g)});
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return a.seconds < b.seconds; });
    // Spills only add time, so once a schedule's compute alone is slower than the best found,
    // nothing after it in this order can win.
    for (Ranked& r : ranked) {
      if (found_ && !options_.smallest && r.seconds > best_.predicted_seconds) break;
      consider(r.member, std::move(r.graph), exhaustive);
    }
    if (!found_) throw NoScheduleFits(nothing_fits(), smallest_device_);
    best_.exhaustive = exhaustive;
    best_.planned = planned_;
    return std::move(best_);
  }

 private:
  Graph rewrite(const Member& m) const {
    Graph g = graph_;
    // Keeping every candidate is `none`: the graph as it is.
    if (m.checkpoints == candidates_ && m.nested.empty()) return g;
    apply_recompute(g, forward_ops_, m.checkpoints, m.nested);
    mark_checkpoints(g, m.checkpoints);
    return g;
  }

  bool spills_allowed() const { return options_.device_budget > 0 && options_.host_budget > 0; }

  // The placements worth trying: with synchronous copies nothing hides, and tight needs least.
  std::vector<SpillPlacement> placements() const {
    if (!options_.cost.asynchronous_copies) return {SpillPlacement::kTight};
    return {SpillPlacement::kHidden, SpillPlacement::kEarlyFree, SpillPlacement::kTight};
  }

  void consider(const Member& m, Graph base, bool exhaustive) {
    const uint64_t unspilled = offer(base, m, {});
    if (!spills_allowed() || m.checkpoints.empty()) return;
    if (exhaustive) {
      // Every non-empty subset of the checkpoints that can spill (read after the forward pass),
      // each placement for all of them; the prefixes below are among them.
      std::vector<int> spillable = spill_order(base, forward_ops_, m.checkpoints, options_.cost);
      std::sort(spillable.begin(), spillable.end());
      const size_t n = spillable.size();
      for (uint32_t mask = 1; mask < (1u << n); ++mask) {
        std::vector<int> spilled;
        for (size_t i = 0; i < n; ++i) {
          if (mask & (1u << i)) spilled.push_back(spillable[i]);
        }
        for (SpillPlacement p : placements())
          offer(with_spilled(base, forward_ops_, spilled, p, options_.cost), m, spilled);
      }
      return;
    }
    // Prefixes of strategies/spill.h's order (cheapest to hide per byte first), one placement for
    // all: everything spilled first (the least device memory this way; if that does not fit, no
    // prefix does), then bisection for the shortest prefix that fits, which is the fastest.
    if (fits_device(unspilled)) return;  // nothing to spill for
    const std::vector<int> order = spill_order(base, forward_ops_, m.checkpoints, options_.cost);
    if (order.empty()) return;
    for (SpillPlacement p : placements()) {
      auto prefix_fits = [&](size_t k) {
        const std::vector<int> spilled(order.begin(), order.begin() + static_cast<long>(k));
        return fits_device(
            offer(with_spilled(base, forward_ops_, spilled, p, options_.cost), m, spilled));
      };
      if (!prefix_fits(order.size()) || options_.smallest) continue;
      size_t low = 0, high = order.size();  // prefix |low| does not fit, |high| does
      while (high - low > 1) {
        const size_t mid = low + (high - low) / 2;
        (prefix_fits(mid) ? high : low) = mid;
      }
    }
  }

  bool fits_device(uint64_t device) const {
    return options_.device_budget == 0 || device <= options_.device_budget;
  }

  // Plans |g| and keeps it if it fits and beats the best so far; returns its device bytes.
  uint64_t offer(const Graph& g, const Member& m, const std::vector<int>& spilled) {
    // (|g| is copied only when it wins.)
    ++planned_;
    const MemoryPlan plan = plan_memory(g, options_.cost.alignment);
    const uint64_t device = plan.arena_size + plan.persistent_size;
    if (smallest_device_ == 0 || device < smallest_device_) {
      smallest_device_ = device;
      smallest_arena_ = plan.arena_size;
    }
    const bool fits = (options_.arena_budget == 0 || plan.arena_size <= options_.arena_budget) &&
                      fits_device(device) && plan.host_size <= options_.host_budget;
    if (!fits) return device;
    const CopyTimeline timeline =
        simulate_copies(g, options_.cost.copy_bandwidth, options_.cost.compute_rate,
                        options_.cost.asynchronous_copies);
    const double seconds = timeline.compute_seconds + timeline.stall_seconds;
    const uint64_t best_device = best_.arena + best_.persistent;
    const bool worse =
        options_.smallest
            ? device > best_device || (device == best_device && seconds >= best_.predicted_seconds)
            : seconds > best_.predicted_seconds ||
                  (seconds == best_.predicted_seconds && device >= best_device);
    if (found_ && worse) return device;
    found_ = true;
    best_.graph = g;
    best_.checkpoints = m.checkpoints;
    best_.nested.clear();
    for (const std::vector<int>& level : m.nested)
      best_.nested.insert(best_.nested.end(), level.begin(), level.end());
    best_.spilled = spilled;
    best_.arena = plan.arena_size;
    best_.persistent = plan.persistent_size;
    best_.host = plan.host_size;
    best_.predicted_seconds = seconds;
    best_.copy_seconds = timeline.copy_seconds;
    best_.hidden_seconds = timeline.hidden_seconds();
    return device;
  }

  std::string nothing_fits() const {
    std::string budgets;
    if (options_.arena_budget > 0)
      budgets += "an arena of " + std::to_string(options_.arena_budget) + " bytes";
    if (options_.device_budget > 0) {
      budgets += (budgets.empty() ? "" : " and ") + std::string("a device budget of ") +
                 std::to_string(options_.device_budget) + " bytes (arena + persistent)";
    }
    if (options_.device_budget > 0 && options_.host_budget == 0) {
      budgets += " with no host memory to spill to (host budget 0)";
    } else if (spills_allowed() && options_.host_budget != UINT64_MAX) {
      budgets += " with at most " + std::to_string(options_.host_budget) + " bytes of host spill";
    }
    return "strategy 'auto': no schedule fits " + budgets + "; the smallest of the " +
           std::to_string(planned_) + " planned needs an arena of " +
           std::to_string(smallest_arena_) + " bytes (" + std::to_string(smallest_device_) +
           " with the persistent region)" +
           (options_.device_budget > 0 ? "" : "; --device-budget allows spilling to host memory");
  }

  const Graph& graph_;
  size_t forward_ops_;
  const AutoOptions& options_;
  std::vector<int> candidates_;
  AutoSchedule best_;
  bool found_ = false;
  size_t planned_ = 0;
  uint64_t smallest_device_ = 0, smallest_arena_ = 0;
};

}  // namespace

double predicted_step_seconds(const Graph& graph, const SpillOptions& cost) {
  const CopyTimeline t =
      simulate_copies(graph, cost.copy_bandwidth, cost.compute_rate, cost.asynchronous_copies);
  return t.compute_seconds + t.stall_seconds;
}

void mark_checkpoints(Graph& graph, const std::vector<int>& checkpoints) {
  for (int t : checkpoints) {
    if (graph.tensors[t].role == Role::kActivation) graph.tensors[t].role = Role::kCheckpoint;
  }
}

AutoSchedule auto_schedule(const Graph& graph, size_t forward_ops, const AutoOptions& options) {
  if (options.arena_budget == 0 && options.device_budget == 0) {
    throw CompileError(
        "strategy 'auto' needs a budget: --arena-budget BYTES (arena) or --device-budget BYTES "
        "(arena + persistent, spilling to host allowed)");
  }
  if (!(options.cost.copy_bandwidth > 0) || !(options.cost.compute_rate > 0)) {
    throw CompileError("copy bandwidth and compute rate must be positive");
  }
  return Search(graph, forward_ops, options).run();
}

}  // namespace compiler
}  // namespace remat
