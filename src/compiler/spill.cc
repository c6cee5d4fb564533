// Spill choice (largest checkpoints first, re-planned after each) and copy-op placement.
#include "compiler/spill.h"

#include <algorithm>

#include "compiler/planner.h"

namespace remat {
namespace compiler {
namespace {

// Inserts spill, wait and prefetch ops for |spilled| into a copy of |base|; returns it.
Graph with_spills(const Graph& base, size_t forward_ops, const std::vector<int>& spilled,
                  const SpillOptions& options, SpillReport* report) {
  Graph g = base;
  const size_t n_ops = g.ops.size();
  std::vector<std::vector<Op>> before(n_ops + 1), after(n_ops);
  double copy_seconds = 0, hidden_seconds = 0;
  for (int c : spilled) {
    int producer = -1, last_forward = -1, first_reader = -1;
    for (size_t i = 0; i < n_ops; ++i) {
      const Op& op = g.ops[i];
      if (i < forward_ops && std::find(op.outputs.begin(), op.outputs.end(), c) != op.outputs.end()) producer = static_cast<int>(i);
      const bool reads = std::find(op.inputs.begin(), op.inputs.end(), c) != op.inputs.end();
      if (reads && i < forward_ops) last_forward = static_cast<int>(i);
      if (reads && i >= forward_ops && first_reader < 0) first_reader = static_cast<int>(i);
    }
    if (producer < 0 || first_reader < 0) continue;
    const Tensor x = g.tensors[c];
    const int slot = g.add_tensor(x.name + "@host", x.dtype, x.shape, Role::kCheckpoint);
    g.tensors[slot].host = true;
    const int back = g.add_tensor(x.name + "@prefetched", x.dtype, x.shape, Role::kCheckpoint);
    // The spill starts as soon as the checkpoint exists; its arena bytes are free once the
    // copy is done, which the wait after the checkpoint's last forward reader guarantees.
    after[producer].push_back(Op{OpCode::kSpill, {c}, {slot}, {}, {}, Phase::kCopy, producer, 0.0});
    after[std::max(producer, last_forward)].push_back(Op{OpCode::kWait, {c}, {}, {}, {}, Phase::kCopy, producer, 0.0});
    // The prefetch goes back from the first reader until the ops in between take as long as
    // the copy (or the backward pass begins), and the reader waits for it.
    const double copy = static_cast<double>(x.bytes()) / options.copy_bandwidth;
    double covered = 0;
    int at = first_reader;
    while (at > static_cast<int>(forward_ops) && covered < copy) {
      --at;
      covered += g.ops[at].flops / options.compute_rate;
    }
    before[at].push_back(Op{OpCode::kPrefetch, {slot}, {back}, {}, {}, Phase::kCopy, producer, 0.0});
    before[first_reader].push_back(Op{OpCode::kWait, {back}, {}, {}, {}, Phase::kCopy, producer, 0.0});
    for (size_t i = forward_ops; i < n_ops; ++i) {
      for (int& t : g.ops[i].inputs) t = t == c ? back : t;
    }
    // The spill overlaps the rest of the forward pass in the same way.
    double forward_cover = 0;
    for (int i = producer + 1; i < static_cast<int>(forward_ops); ++i) forward_cover += g.ops[i].flops / options.compute_rate;
    copy_seconds += 2 * copy;
    hidden_seconds += std::min(copy, covered) + std::min(copy, forward_cover);
  }
  std::vector<Op> ops;
  ops.reserve(n_ops + 4 * spilled.size());
  for (size_t i = 0; i < n_ops; ++i) {
    ops.insert(ops.end(), before[i].begin(), before[i].end());
    ops.push_back(g.ops[i]);
    ops.insert(ops.end(), after[i].begin(), after[i].end());
  }
  g.ops = std::move(ops);
  if (report != nullptr) {
    report->spilled = spilled;
    report->copy_seconds = copy_seconds;
    report->hidden_seconds = hidden_seconds;
  }
  return g;
}

uint64_t device_bytes(const Graph& g, uint32_t alignment) {
  const MemoryPlan m = plan_memory(g, alignment);
  return m.arena_size + m.persistent_size;
}

}  // namespace

SpillReport apply_spills(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints,
                         const SpillOptions& options) {
  SpillReport report;
  uint64_t needed = device_bytes(graph, options.alignment);
  if (options.device_budget == 0 || needed <= options.device_budget) return report;
  std::vector<int> order = checkpoints;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return graph.tensors[a].bytes() > graph.tensors[b].bytes(); });
  std::vector<int> spilled;
  Graph best = graph;
  for (int c : order) {
    spilled.push_back(c);
    Graph candidate = with_spills(graph, forward_ops, spilled, options, &report);
    const uint64_t bytes = device_bytes(candidate, options.alignment);
    if (bytes < needed) {
      needed = bytes;
      best = std::move(candidate);
    } else {
      spilled.pop_back();  // no gain (its bytes were reused anyway): keep it on the device
    }
    if (needed <= options.device_budget) break;
  }
  if (needed > options.device_budget) {
    throw CompileError("device budget " + std::to_string(options.device_budget) + " bytes is too small: with " +
                       std::to_string(spilled.size()) + " checkpoints spilled the step still needs " +
                       std::to_string(needed) + " bytes of arena and persistent memory (" +
                       std::to_string(needed - options.device_budget) + " over); try a strategy with more recomputation");
  }
  with_spills(graph, forward_ops, spilled, options, &report);
  graph = std::move(best);
  return report;
}

}  // namespace compiler
}  // namespace remat
