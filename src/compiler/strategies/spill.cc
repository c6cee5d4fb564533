// Spill choice (cheapest to hide first, re-planned after each) and copy-op placement.
#include "compiler/strategies/spill.h"

#include <algorithm>

#include "compiler/strategies/copy_timeline.h"
#include "compiler/planner.h"

namespace remat {
namespace compiler {
namespace {

// The spill search plans the whole step once per placement it tries: it gives up, with a
// message, once the tensors it has planned add up to this (half a minute on a slow core)
// rather than run for hours on a deep model (docs/sizing.md, "Compile time").
constexpr uint64_t kMaxSpillSearchTensors = uint64_t{1} << 24;

// Where a checkpoint is made and read in the base graph.
struct Uses {
  int producer = -1;      // Forward op that writes it.
  int last_forward = -1;  // Last forward op that reads it (or the producer).
  int first_reader = -1;  // First op after the forward pass that reads it.
};

struct Spill {
  int tensor;
  Uses uses;  // Found once per checkpoint, not per candidate plan.
  SpillPlacement placement;
};

// Uses of every tensor, found in one pass over the ops.
std::vector<Uses> find_uses(const Graph& g, size_t forward_ops) {
  std::vector<Uses> uses(g.tensors.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const int at = static_cast<int>(i);
    if (i < forward_ops) {
      for (int t : op.outputs) uses[t].producer = at;
    }
    for (int t : op.inputs) {
      if (i < forward_ops) uses[t].last_forward = at;
      if (i >= forward_ops && uses[t].first_reader < 0) uses[t].first_reader = at;
    }
  }
  for (Uses& u : uses) u.last_forward = std::max(u.last_forward, u.producer);
  return uses;
}

// Modelled compute seconds from the start of the step to the end of each op.
std::vector<double> compute_clock(const Graph& g, double compute_rate) {
  std::vector<double> clock(g.ops.size());
  double now = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) clock[i] = now += g.ops[i].flops / compute_rate;
  return clock;
}

// A checkpoint that may spill, with what orders it.
struct Candidate {
  int tensor;
  Uses uses;
  double exposed_per_byte;
  uint64_t bytes;
};

// Candidates, cheapest first: the modelled copy time that compute cannot hide, per byte the
// spill frees (a spill can overlap the rest of the forward pass, its prefetch the backward ops
// before its reader), then the larger first.
std::vector<Candidate> spill_candidates(const Graph& graph, size_t forward_ops,
                                        const std::vector<int>& checkpoints,
                                        const std::vector<double>& clock,
                                        const SpillOptions& options) {
  const double forward_end = forward_ops > 0 ? clock[forward_ops - 1] : 0.0;
  std::vector<Candidate> order;
  const std::vector<Uses> uses = find_uses(graph, forward_ops);
  for (int c : checkpoints) {
    const Uses u = uses[c];
    const uint64_t bytes = graph.tensors[c].bytes();
    // Not read after the forward pass, or nothing to free.
    if (u.producer < 0 || u.first_reader < 0 || bytes == 0) continue;
    const double copy = static_cast<double>(bytes) / options.copy_bandwidth;
    const double forward_cover = forward_end - clock[u.producer];
    const double backward_cover = clock[u.first_reader - 1] - forward_end;
    const double exposed = options.asynchronous_copies ? std::max(0.0, copy - forward_cover) +
                                                             std::max(0.0, copy - backward_cover)
                                                       : 2 * copy;
    order.push_back({c, u, exposed / static_cast<double>(bytes), bytes});
  }
  std::stable_sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    if (a.exposed_per_byte != b.exposed_per_byte) return a.exposed_per_byte < b.exposed_per_byte;
    return a.bytes > b.bytes;
  });
  return order;
}

// Inserts spill, wait and prefetch ops for |spills| into a copy of |base|; returns it.
Graph with_spills(const Graph& base, size_t forward_ops, const std::vector<Spill>& spills,
                  const std::vector<double>& clock, const SpillOptions& options) {
  Graph g = base;
  const size_t n_ops = g.ops.size();
  const int last_forward_op = static_cast<int>(forward_ops) - 1;
  std::vector<std::vector<Op>> before(n_ops), after(n_ops);
  // Spills queue on one copy stream in the order they are issued: place their waits in it.
  std::vector<size_t> by_producer(spills.size());
  for (size_t i = 0; i < spills.size(); ++i) by_producer[i] = i;
  std::stable_sort(by_producer.begin(), by_producer.end(), [&](size_t a, size_t b) {
    return spills[a].uses.producer < spills[b].uses.producer;
  });
  double copy_free = 0;
  std::vector<int> renamed(g.tensors.size(), -1);  // checkpoint -> its prefetched copy
  for (size_t k : by_producer) {
    const int c = spills[k].tensor;
    const Uses& u = spills[k].uses;
    const Tensor x = g.tensors[c];
    const double copy = static_cast<double>(x.bytes()) / options.copy_bandwidth;
    copy_free = std::max(clock[u.producer], copy_free) + copy;
    const int slot = g.add_tensor(x.name + "@host", x.dtype, x.shape, Role::kCheckpoint);
    g.tensors[slot].host = true;
    const int back = g.add_tensor(x.name + "@prefetched", x.dtype, x.shape, Role::kCheckpoint);
    // The spill starts as soon as the checkpoint exists; its arena bytes are free once the
    // wait has seen the copy done, so the wait is never before the last forward reader.
    int wait_at = u.last_forward;
    if (spills[k].placement == SpillPlacement::kHidden) {
      while (wait_at < last_forward_op && clock[wait_at] < copy_free) ++wait_at;
    }
    after[u.producer].push_back(
        Op{OpCode::kSpill, {c}, {slot}, {}, {}, Phase::kCopy, u.producer, 0.0});
    after[wait_at].push_back(Op{OpCode::kWait, {c}, {}, {}, {}, Phase::kCopy, u.producer, 0.0});
    // The prefetch goes back from the first reader until the ops in between take as long as
    // the copy (or the backward pass begins); the reader waits for it.
    int prefetch_at = u.first_reader;
    if (spills[k].placement != SpillPlacement::kTight) {
      double covered = 0;
      while (prefetch_at > static_cast<int>(forward_ops) && covered < copy) {
        --prefetch_at;
        covered += g.ops[prefetch_at].flops / options.compute_rate;
      }
    }
    before[prefetch_at].push_back(
        Op{OpCode::kPrefetch, {slot}, {back}, {}, {}, Phase::kCopy, u.producer, 0.0});
    before[u.first_reader].push_back(
        Op{OpCode::kWait, {back}, {}, {}, {}, Phase::kCopy, u.producer, 0.0});
    if (renamed[c] < 0) renamed[c] = back;
  }
  // The backward pass reads each spilled checkpoint from its prefetched copy.
  for (size_t i = forward_ops; i < n_ops; ++i) {
    for (int& t : g.ops[i].inputs)
      t = t < static_cast<int>(renamed.size()) && renamed[t] >= 0 ? renamed[t] : t;
  }
  std::vector<Op> ops;
  ops.reserve(n_ops + 4 * spills.size());
  for (size_t i = 0; i < n_ops; ++i) {
    ops.insert(ops.end(), before[i].begin(), before[i].end());
    ops.push_back(g.ops[i]);
    ops.insert(ops.end(), after[i].begin(), after[i].end());
  }
  g.ops = std::move(ops);
  return g;
}

uint64_t device_bytes(const Graph& g, uint32_t alignment) {
  const MemoryPlan m = plan_memory(g, alignment);
  return m.arena_size + m.persistent_size;
}

}  // namespace

std::vector<int> spill_order(const Graph& graph, size_t forward_ops,
                             const std::vector<int>& checkpoints, const SpillOptions& options) {
  std::vector<int> out;
  for (const Candidate& c : spill_candidates(graph, forward_ops, checkpoints,
                                             compute_clock(graph, options.compute_rate), options)) {
    out.push_back(c.tensor);
  }
  return out;
}

Graph with_spilled(const Graph& base, size_t forward_ops, const std::vector<int>& spilled,
                   SpillPlacement placement, const SpillOptions& options) {
  const std::vector<Uses> uses = find_uses(base, forward_ops);
  std::vector<Spill> spills;
  for (int t : spilled) {
    if (uses[t].producer < 0 || uses[t].first_reader < 0) {
      throw CompileError("tensor '" + base.tensors[t].name +
                         "' is not a checkpoint the backward pass reads: it cannot spill");
    }
    spills.push_back({t, uses[t], placement});
  }
  return with_spills(base, forward_ops, spills, compute_clock(base, options.compute_rate), options);
}

SpillReport apply_spills(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints,
                         const SpillOptions& options) {
  SpillReport report;
  if (options.device_budget == 0) return report;  // no budget: no need to plan here
  const uint64_t unspilled = device_bytes(graph, options.alignment);
  if (unspilled <= options.device_budget) return report;
  const std::vector<double> clock = compute_clock(graph, options.compute_rate);

  const std::vector<Candidate> order =
      spill_candidates(graph, forward_ops, checkpoints, clock, options);
  // Greedy: add candidates in order, each with the most hidden placement that lowers the
  // device bytes, until the step fits. |placements| lists what may be tried.
  std::vector<Spill> spills;
  Graph best;
  uint64_t needed = unspilled;
  uint64_t planned = 0;  // tensors planned by the search so far
  auto greedy = [&](std::initializer_list<SpillPlacement> placements) {
    spills.clear();
    best = graph;
    needed = unspilled;
    for (size_t tried = 0; tried < order.size(); ++tried) {
      const Candidate& candidate = order[tried];
      for (SpillPlacement p : placements) {
        planned += graph.tensors.size() + 2 * (spills.size() + 1);
        if (planned > kMaxSpillSearchTensors) {
          throw CompileError("device budget " + std::to_string(options.device_budget) +
                             " bytes: the spill search gave up after " + std::to_string(tried) +
                             " of " + std::to_string(order.size()) +
                             " checkpoints (each try plans the " +
                             std::to_string(graph.tensors.size()) + "-tensor step again; limit " +
                             std::to_string(kMaxSpillSearchTensors) +
                             " tensors planned); try a larger budget, a strategy with fewer "
                             "checkpoints or fewer layers");
        }
        spills.push_back({candidate.tensor, candidate.uses, p});
        Graph spilled = with_spills(graph, forward_ops, spills, clock, options);
        const uint64_t bytes = device_bytes(spilled, options.alignment);
        if (bytes < needed) {
          needed = bytes;
          best = std::move(spilled);
          break;
        }
        spills.pop_back();  // No gain this way (its bytes were reused anyway).
      }
      if (needed <= options.device_budget) return;
    }
  };
  // Synchronous copies hide nothing wherever they are: take the least memory for each.
  if (options.asynchronous_copies)
    greedy({SpillPlacement::kHidden, SpillPlacement::kEarlyFree, SpillPlacement::kTight});
  // Hidden placements hold bytes longer; if that made the budget unreachable, take the least
  // memory for every spill.
  if (!options.asynchronous_copies || needed > options.device_budget)
    greedy({SpillPlacement::kTight});
  if (needed > options.device_budget) {
    throw CompileError("device budget " + std::to_string(options.device_budget) +
                       " bytes is too small: with " + std::to_string(spills.size()) +
                       " checkpoints spilled the step still needs " + std::to_string(needed) +
                       " bytes of arena and persistent memory (" +
                       std::to_string(needed - options.device_budget) +
                       " over); try a strategy with more recomputation");
  }
  for (const Spill& s : spills) report.spilled.push_back(s.tensor);
  const CopyTimeline timeline = simulate_copies(best, options.copy_bandwidth, options.compute_rate,
                                                options.asynchronous_copies);
  report.copy_seconds = timeline.copy_seconds;
  report.hidden_seconds = timeline.hidden_seconds();
  graph = std::move(best);
  return report;
}

}  // namespace compiler
}  // namespace remat
