// Greedy-by-size arena placement and region assignment by role.
#include "compiler/planner.h"

#include <algorithm>
#include <string>

#include "compiler/placed_index.h"
#include "plan/region.h"

namespace remat {
namespace compiler {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

const char* region_name(Region r) {
  return r == Region::kPersistent ? "persistent" : r == Region::kHost ? "host" : "arena";
}

}  // namespace

int ArenaPlanner::add_buffer(uint64_t size, int first, int last) {
  if (last < first) {
    throw CompileError("planner: buffer " + std::to_string(buffers_.size()) + " is used from op " +
                       std::to_string(first) + " to op " + std::to_string(last) +
                       ", which ends before it starts");
  }
  buffers_.push_back(Buffer{align_up(size, alignment_), first, last, 0, false});
  return static_cast<int>(buffers_.size()) - 1;
}

int ArenaPlanner::add_fixed_buffer(uint64_t offset, uint64_t size, int first, int last) {
  const int id = add_buffer(size, first, last);
  buffers_[id].offset = offset;
  buffers_[id].fixed = true;
  return id;
}

void ArenaPlanner::plan() {
  // Largest first; each goes to the lowest offset where it shares no byte with a placed buffer
  // that meets it in time. PlacedIndex answers that without looking at every placed buffer.
  std::vector<int> order;
  order.reserve(buffers_.size());
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (!buffers_[i].fixed) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (buffers_[a].size != buffers_[b].size) return buffers_[a].size > buffers_[b].size;
    return buffers_[a].first < buffers_[b].first;
  });
  // Op indices only matter by their order: number the distinct first and last uses 0, 1, ...
  std::vector<int> times;
  times.reserve(2 * buffers_.size());
  for (const Buffer& b : buffers_) {
    times.push_back(b.first);
    times.push_back(b.last);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](int t) {
    return static_cast<size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  PlacedIndex placed(times.size());
  size_ = 0;
  for (const Buffer& b : buffers_) {
    if (!b.fixed) continue;
    placed.add(rank(b.first), rank(b.last), b.offset, b.offset + b.size);
    size_ = std::max(size_, b.offset + b.size);
  }
  for (int id : order) {
    Buffer& b = buffers_[id];
    const size_t from = rank(b.first), to = rank(b.last);
    b.offset = placed.lowest_fit(from, to, b.size);
    placed.add(from, to, b.offset, b.offset + b.size);
    size_ = std::max(size_, b.offset + b.size);
  }
}

std::vector<uint64_t> ArenaPlanner::live_bytes_per_op(int max_op) const {
  // Difference array over op indices; first == -1 counts from op 0.
  std::vector<int64_t> delta(static_cast<size_t>(max_op) + 2, 0);
  for (const Buffer& b : buffers_) {
    const int from = std::max(b.first, 0);
    const int to = std::min(b.last, max_op);
    if (from > to) continue;
    delta[from] += static_cast<int64_t>(b.size);
    delta[to + 1] -= static_cast<int64_t>(b.size);
  }
  std::vector<uint64_t> live(static_cast<size_t>(max_op) + 1);
  int64_t running = 0;
  for (int i = 0; i <= max_op; ++i) {
    running += delta[i];
    live[i] = static_cast<uint64_t>(running);
  }
  return live;
}

uint64_t ArenaPlanner::lower_bound() const {
  int max_op = 0;
  for (const Buffer& b : buffers_) max_op = std::max(max_op, std::max(b.first, b.last));
  const std::vector<uint64_t> live = live_bytes_per_op(max_op);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

MemoryPlan plan_memory(const Graph& graph, uint32_t alignment) {
  const size_t n = graph.tensors.size();
  const int op_count = static_cast<int>(graph.ops.size());
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.region.assign(n, static_cast<uint8_t>(Region::kArena));
  plan.offset.assign(n, 0);
  plan.size.assign(n, 0);
  plan.first_use.assign(n, op_count);
  plan.last_use.assign(n, -1);
  for (int i = 0; i < op_count; ++i) {
    const Op& op = graph.ops[i];
    for (int t : op.outputs) plan.first_use[t] = std::min(plan.first_use[t], i);
    for (int t : op.inputs) plan.last_use[t] = std::max(plan.last_use[t], i);
    for (int t : op.outputs) plan.last_use[t] = std::max(plan.last_use[t], i);
  }
  // The caller reads the eval program's loss and outputs after its last op.
  if (graph.eval_ops > 0) plan.last_use[graph.eval_loss] = op_count;
  for (int t : graph.outputs) plan.last_use[t] = op_count;
  const int eval_begin = op_count - static_cast<int>(graph.eval_ops);
  ArenaPlanner arena(alignment), host(alignment), eval(alignment);
  std::vector<int> eval_id(n, -1);
  std::vector<int> arena_id(n, -1), host_id(n, -1);
  uint64_t total[kRegionCount] = {0, 0, 0};  // bytes of all tensors, by region
  for (size_t t = 0; t < n; ++t) {
    const Tensor& x = graph.tensors[t];
    plan.size[t] = align_up(x.bytes(), alignment);
    const bool eval_loss = graph.eval_ops > 0 && static_cast<int>(t) == graph.eval_loss;
    const bool persistent =
        x.role == Role::kParam || x.role == Role::kState || (x.role == Role::kLoss && !eval_loss);
    const Region region = persistent ? Region::kPersistent
                          : x.host   ? Region::kHost
                                     : Region::kArena;
    uint64_t& sum = total[static_cast<size_t>(region)];
    if (plan.size[t] > kMaxRegionBytes - sum) {
      throw CompileError("tensor '" + x.name + "' (" + std::to_string(plan.size[t]) +
                         " bytes) takes the " + region_name(region) + " tensors over " +
                         std::to_string(kMaxRegionBytes) +
                         " bytes (2^48), the most one region may hold");
    }
    sum += plan.size[t];
    if (persistent) {
      plan.region[t] = static_cast<uint8_t>(Region::kPersistent);
      plan.offset[t] = plan.persistent_size;
      plan.persistent_size += plan.size[t];
      plan.first_use[t] = -1;
      plan.last_use[t] = op_count;
      continue;
    }
    // Inputs and labels are written by the caller before a step and keep their value across
    // steps until set again, so they hold their bytes through the whole step.
    if (x.role == Role::kInput || x.role == Role::kLabel) {
      plan.first_use[t] = -1;
      plan.last_use[t] = op_count;
    }
    if (plan.last_use[t] < plan.first_use[t]) plan.last_use[t] = plan.first_use[t];
    if (plan.first_use[t] == op_count) continue;  // never used: takes no space
    if (x.host) {
      plan.region[t] = static_cast<uint8_t>(Region::kHost);
      host_id[t] = host.add_buffer(plan.size[t], plan.first_use[t], plan.last_use[t]);
      continue;
    }
    if (plan.first_use[t] >= eval_begin) {
      eval_id[t] = eval.add_buffer(plan.size[t], plan.first_use[t], plan.last_use[t]);
      continue;
    }
    arena_id[t] = arena.add_buffer(plan.size[t], plan.first_use[t], plan.last_use[t]);
  }
  arena.plan();
  host.plan();
  for (size_t t = 0; t < n; ++t) {
    if (arena_id[t] >= 0) plan.offset[t] = arena.offset(arena_id[t]);
    if (host_id[t] >= 0) plan.offset[t] = host.offset(host_id[t]);
    // The eval program reads the inputs and labels where the step has them.
    if (arena_id[t] >= 0 && graph.eval_ops > 0 && plan.last_use[t] >= eval_begin) {
      eval.add_fixed_buffer(plan.offset[t], plan.size[t], plan.first_use[t], plan.last_use[t]);
    }
  }
  eval.plan();
  for (size_t t = 0; t < n; ++t) {
    if (eval_id[t] >= 0) plan.offset[t] = eval.offset(eval_id[t]);
  }
  plan.step_arena_size = arena.size();
  plan.eval_arena_size = eval.size();
  plan.arena_size = std::max(arena.size(), eval.size());
  plan.host_size = host.size();
  plan.lower_bound = std::max(arena.lower_bound(), eval.lower_bound());
  return plan;
}

}  // namespace compiler
}  // namespace remat
