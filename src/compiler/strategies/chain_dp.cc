// Exact budget-constrained checkpointing on chains, and its brute-force twin for tests.
#include "compiler/strategies/chain_dp.h"

#include <algorithm>

namespace remat {
namespace compiler {

uint64_t chain_memory(const std::vector<ChainStage>& stages, const ChainSchedule& s) {
  uint64_t fixed = 0, segment = 0, largest = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (s.kept[i]) {
      fixed += stages[i].act;
      segment = 0;
      continue;
    }
    segment += stages[i].act;
    largest = std::max(largest, segment);
    if (s.checkpoint[i]) {
      fixed += stages[i].out;
      segment = 0;
    }
  }
  return fixed + largest;
}

double chain_cost(const std::vector<ChainStage>& stages, const ChainSchedule& s) {
  double cost = 0;
  for (size_t i = 0; i < stages.size(); ++i) cost += s.kept[i] ? 0.0 : stages[i].cost;
  return cost;
}

namespace {

bool better(double cost, uint64_t memory, const ChainSchedule& than) {
  return !than.feasible || cost < than.cost || (cost == than.cost && memory < than.memory);
}

// One non-dominated partial schedule at a cut (a position where a segment may start).
struct Entry {
  uint64_t memory;  // kept + checkpointed bytes so far
  double cost;
  int from_cut;    // previous cut, or -1 at the start
  int from_entry;  // index in the previous cut's front
  int8_t move;     // 0: keep stage; 1: segment then checkpoint; 2: segment then keep next
  int seg_end;     // last stage of the segment (moves 1 and 2)
};

// Most entries a front keeps. Fronts of chains up to a few dozen stages stay far below it;
// beyond it the cheapest-memory entries are kept and the answer may stop being exact.
constexpr size_t kMaxFront = 256;

// Adds |e| to |front| unless dominated; drops what it dominates.
void insert(std::vector<Entry>& front, const Entry& e) {
  for (const Entry& f : front) {
    if (f.memory <= e.memory && f.cost <= e.cost) return;
  }
  if (front.size() >= kMaxFront) {
    auto worst = std::max_element(front.begin(), front.end(), [](const Entry& a, const Entry& b) {
      return a.memory < b.memory;
    });
    if (worst->memory <= e.memory) return;
    front.erase(worst);
  }
  front.erase(
      std::remove_if(front.begin(), front.end(),
                     [&](const Entry& f) { return e.memory <= f.memory && e.cost <= f.cost; }),
      front.end());
  front.push_back(e);
}

}  // namespace

ChainSchedule solve_chain(const std::vector<ChainStage>& stages, uint64_t budget) {
  const int n = static_cast<int>(stages.size());
  ChainSchedule best;
  if (n == 0) return best;
  std::vector<uint64_t> prefix(n + 1, 0);
  std::vector<double> cost_prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    prefix[i + 1] = prefix[i] + stages[i].act;
    cost_prefix[i + 1] = cost_prefix[i] + stages[i].cost;
  }
  // The largest segment L is enumerated: every contiguous sum over the first n - 1 stages, and 0.
  std::vector<uint64_t> limits{0};
  for (int i = 0; i + 1 < n; ++i) {
    for (int j = i; j + 1 < n; ++j) limits.push_back(prefix[j + 1] - prefix[i]);
  }
  std::sort(limits.begin(), limits.end());
  limits.erase(std::unique(limits.begin(), limits.end()), limits.end());
  for (uint64_t limit : limits) {
    if (limit > budget) break;
    const uint64_t room = budget - limit;
    std::vector<std::vector<Entry>> fronts(n + 1);
    fronts[0].push_back(Entry{0, 0.0, -1, -1, 0, -1});
    for (int cut = 0; cut + 1 < n; ++cut) {
      for (int e = 0; e < static_cast<int>(fronts[cut].size()); ++e) {
        const Entry base = fronts[cut][e];
        const uint64_t keep = base.memory + stages[cut].act;
        if (keep <= room) insert(fronts[cut + 1], Entry{keep, base.cost, cut, e, 0, -1});
        for (int end = cut; end + 1 < n && prefix[end + 1] - prefix[cut] <= limit; ++end) {
          const double cost = base.cost + cost_prefix[end + 1] - cost_prefix[cut];
          const uint64_t checkpoint = base.memory + stages[end].out;
          if (end + 1 < n - 1 && checkpoint <= room)
            insert(fronts[end + 1], Entry{checkpoint, cost, cut, e, 1, end});
          const uint64_t keep_next = base.memory + stages[end + 1].act;
          if (keep_next <= room) insert(fronts[end + 2], Entry{keep_next, cost, cut, e, 2, end});
        }
      }
    }
    // Complete: the last stage is kept (reached either by move 0 into cut n or move 2).
    std::vector<Entry> done = fronts[n];
    for (int e = 0; e < static_cast<int>(fronts[n - 1].size()); ++e) {
      const Entry& base = fronts[n - 1][e];
      if (base.memory + stages[n - 1].act <= room) {
        done.push_back(Entry{base.memory + stages[n - 1].act, base.cost, n - 1, e, 0, -1});
      }
    }
    for (const Entry& d : done) {
      // Rebuild the schedule and score it with the model itself (the DP's memory counts
      // the limit L, the real largest segment may be smaller).
      ChainSchedule s;
      s.kept.assign(n, 0);
      s.checkpoint.assign(n, 0);
      Entry at = d;
      while (at.from_cut >= 0) {
        const int from = at.from_cut;
        if (at.move == 0) {
          s.kept[from] = 1;
        } else {
          if (at.move == 1) s.checkpoint[at.seg_end] = 1;
          if (at.move == 2) s.kept[at.seg_end + 1] = 1;
        }
        at = fronts[from][at.from_entry];
      }
      s.kept[n - 1] = 1;
      s.memory = chain_memory(stages, s);
      s.cost = chain_cost(stages, s);
      s.feasible = s.memory <= budget;
      if (s.feasible && better(s.cost, s.memory, best)) best = s;
    }
  }
  return best;
}

ChainSchedule brute_force_chain(const std::vector<ChainStage>& stages, uint64_t budget) {
  const int n = static_cast<int>(stages.size());
  ChainSchedule best;
  if (n == 0) return best;
  uint64_t combinations = 1;
  for (int i = 0; i + 1 < n; ++i) combinations *= 3;
  ChainSchedule s;
  s.kept.assign(n, 0);
  s.checkpoint.assign(n, 0);
  s.kept[n - 1] = 1;
  for (uint64_t code = 0; code < combinations; ++code) {
    uint64_t c = code;
    for (int i = 0; i + 1 < n; ++i, c /= 3) {
      s.kept[i] = c % 3 == 0;
      s.checkpoint[i] = c % 3 == 1;
    }
    s.memory = chain_memory(stages, s);
    s.cost = chain_cost(stages, s);
    if (s.memory <= budget && better(s.cost, s.memory, best)) {
      best = s;
      best.feasible = true;
    }
  }
  return best;
}

}  // namespace compiler
}  // namespace remat
