// Sizing rows and the max-batch search of `remat size`.
#include "cli/sizing.h"

#include <algorithm>

#include "compiler/strategies/auto.h"
#include "compiler/graph.h"
#include "plan/allreduce_slots.h"
#include "plan/ops.h"
#include "plan/region.h"

namespace remat {
namespace cli {

double SizeRow::efficiency() const {
  return arena_bytes ? static_cast<double>(lower_bound) / static_cast<double>(arena_bytes) : 1.0;
}

double SizeRow::recomputed_share() const {
  return step_flops > 0 ? recomputed_flops / step_flops : 0.0;
}

double SizeRow::seconds_per_sample() const {
  return batch > 0 ? predicted_seconds / static_cast<double>(batch) : 0.0;
}

bool takes_arena_budget(const std::string& strategy) {
  return strategy == "budget" || strategy == "auto";
}

compiler::CompileOptions size_options(const SizeSetup& setup, const std::string& strategy,
                                      int64_t batch, uint64_t arena_budget) {
  compiler::CompileOptions o;
  o.model = setup.model;
  o.loss = setup.loss;
  o.batch = batch;
  o.optimizer = setup.optimizer;
  o.strategy = strategy;
  o.alignment = setup.alignment;
  if (takes_arena_budget(strategy)) o.arena_budget = arena_budget;
  // Rows spill to fit the device budget only where the host budget allows it. Without an arena
  // budget, `budget` and `auto` take the device budget, which the compiler turns into an arena
  // budget at each batch (less the persistent region and the workspace).
  const bool derives_arena = takes_arena_budget(strategy) && arena_budget == 0;
  if ((setup.host_budget > 0 && (strategy == "auto" || setup.fixed_rows_spill)) || derives_arena) {
    o.device_budget = setup.device_budget;
    if (strategy == "auto") o.host_budget = setup.host_budget;
  }
  o.copy_bandwidth = setup.copy_bandwidth;
  o.compute_rate = setup.compute_rate;
  o.asynchronous_copies = setup.asynchronous_copies;
  o.widening = setup.widening;
  o.finite_checks = setup.finite_checks;
  o.eval_program = setup.eval_program;
  o.attention = setup.attention;
  o.precision = setup.precision;
  o.loss_scale = setup.loss_scale;
  o.data_parallel = setup.data_parallel;
  return o;
}

uint64_t persistent_bytes(const SizeSetup& setup, int64_t batch) {
  SizeSetup unspilled = setup;  // the persistent region does not depend on spilling either
  unspilled.host_budget = 0;
  return compiler::compile(size_options(unspilled, "none", batch, 0)).report.persistent_bytes;
}

SizeRow size_row(const SizeSetup& setup, const std::string& strategy, int64_t batch,
                 uint64_t arena_budget, bool smallest) {
  SizeRow row;
  row.strategy = strategy;
  row.batch = batch;
  row.precision = setup.precision;
  if (takes_arena_budget(strategy)) row.arena_budget = arena_budget;
  compiler::CompileResult result;
  try {
    compiler::CompileOptions options = size_options(setup, strategy, batch, arena_budget);
    options.auto_smallest = smallest;
    result = compiler::compile(options);
  } catch (const compiler::NoScheduleFits& e) {
    row.error = e.what();
    row.smallest_device_bytes = e.smallest_device;
    return row;
  } catch (const compiler::CompileError& e) {
    row.error = e.what();
    return row;
  }
  const compiler::CompileReport& r = result.report;
  if (r.host_bytes >
      setup.host_budget) {  // auto keeps to it; the other strategies' spills are checked here
    row.error = "strategy '" + strategy + "' spills " + std::to_string(r.host_bytes) +
                " bytes to host to fit the device budget, over the host budget of " +
                std::to_string(setup.host_budget) + " bytes";
    return row;
  }
  const compiler::MemoryPlan& m = result.memory;
  const compiler::Graph& g = result.graph;
  row.arena_bytes = r.arena_bytes;
  row.persistent_bytes = r.persistent_bytes;
  row.host_bytes = r.host_bytes;
  row.workspace_bytes = r.workspace_bytes;
  if (takes_arena_budget(strategy) && arena_budget == 0 && setup.device_budget > 0 &&
      setup.device_budget > r.persistent_bytes + r.workspace_bytes) {
    row.arena_budget = setup.device_budget - r.persistent_bytes - r.workspace_bytes;
  }
  row.spills = r.spilled.size();
  row.lower_bound = r.lower_bound;
  row.step_flops = r.step_flops;
  row.recomputed_flops = r.recomputed_flops;
  row.checkpoints = r.checkpoints;
  row.nested = r.nested;
  row.predicted_seconds = r.predicted_seconds;
  uint64_t slots = 0;
  for (const compiler::Op& op : g.ops) {
    if (op.code != OpCode::kAllreduceStart) continue;
    for (int t : op.inputs)
      slots += allreduce_slot_array_bytes(
          static_cast<uint64_t>(g.tensors[static_cast<size_t>(t)].numel()));
  }
  row.allreduce_host_bytes = allreduce_slot_pages(slots);
  row.op_count = g.ops.size();
  row.eval_ops = g.eval_ops;
  row.backward_start = row.op_count;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].phase != compiler::Phase::kForward) {
      row.backward_start = i;
      break;
    }
  }
  // Live arena bytes per op of the step, from the same lifetimes and aligned sizes the planner
  // placed; their maximum is the planner's lower bound unless the eval program needs more.
  const size_t step_ops = row.op_count - row.eval_ops;
  const int ops = static_cast<int>(step_ops);
  std::vector<int64_t> delta(step_ops + 1, 0), weight_delta(step_ops + 1, 0);
  std::vector<bool> param_grad(g.tensors.size(), false);
  for (int t : g.param_grads) param_grad[static_cast<size_t>(t)] = true;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (m.region[t] == static_cast<uint8_t>(Region::kPersistent)) {
      const compiler::Role role = g.tensors[t].role;
      if (role == compiler::Role::kParam) row.param_bytes += m.size[t];
      if (role == compiler::Role::kState) row.state_bytes += m.size[t];
      continue;
    }
    if (m.region[t] != static_cast<uint8_t>(Region::kArena) || m.first_use[t] >= ops) continue;
    const int from = std::max(m.first_use[t], 0);
    const int to = std::min(m.last_use[t], ops - 1);
    if (from > to) continue;
    delta[from] += static_cast<int64_t>(m.size[t]);
    delta[to + 1] -= static_cast<int64_t>(m.size[t]);
    if (param_grad[t]) {
      weight_delta[from] += static_cast<int64_t>(m.size[t]);
      weight_delta[to + 1] -= static_cast<int64_t>(m.size[t]);
    }
  }
  row.live_bytes.resize(step_ops);
  int64_t running = 0, weights = 0;
  for (size_t i = 0; i < step_ops; ++i) {
    running += delta[i];
    weights += weight_delta[i];
    row.live_bytes[i] = static_cast<uint64_t>(running);
    if (row.live_bytes[i] > row.peak_live_bytes) {
      row.peak_live_bytes = row.live_bytes[i];
      row.peak_param_grad_bytes = static_cast<uint64_t>(weights);
    }
  }
  return row;
}

MaxBatch find_max_batch(const SizeSetup& setup, const std::string& strategy, int64_t lo, int64_t hi,
                        uint64_t budget, uint64_t arena_budget) {
  MaxBatch out;
  // `auto` is probed for its smallest fitting schedule, whose bytes grow almost linearly with
  // the batch like a fixed strategy's; its fastest is compiled once at the answer.
  const bool probe_smallest = strategy == "auto";
  auto evaluate = [&](int64_t batch) {
    ++out.compiles;
    return size_row(setup, strategy, batch, arena_budget, probe_smallest);
  };
  auto fastest = [&](SizeRow found) {
    if (!probe_smallest || !found.ok() || found.batch == 0) return found;
    ++out.compiles;
    return size_row(setup, strategy, found.batch, arena_budget);
  };
  auto fits = [&](const SizeRow& r) { return r.ok() && r.device_bytes() <= budget; };
  SizeRow good = evaluate(lo);
  if (!good.ok()) {
    out.row = good;
    return out;
  }
  if (!fits(good)) {
    out.row = good;
    out.row.batch = 0;
    out.over_bytes = good.device_bytes();
    return out;
  }
  // Doubling until a batch does not fit (or |hi| fits).
  SizeRow bad;
  bool have_bad = false;
  while (!have_bad) {
    if (good.batch >= hi) {
      out.row = fastest(good);
      out.capped = true;
      return out;
    }
    SizeRow next = evaluate(std::min(hi, good.batch * 2));
    if (fits(next))
      good = std::move(next);
    else {
      bad = std::move(next);
      have_bad = true;
    }
  }
  // Shrink [good, bad) to adjacent batches. Device bytes grow almost linearly with the batch,
  // so a guess by linear interpolation usually lands next to the answer; a step that does not
  // halve the bracket is followed by a bisection step, which bounds the compiles at twice
  // those of plain bisection.
  bool bisect = false;
  while (bad.batch - good.batch > 1) {
    const int64_t width = bad.batch - good.batch;
    int64_t mid = good.batch + width / 2;
    // A failed `auto` compile still says how large its smallest schedule was.
    const uint64_t bad_bytes = bad.ok() ? bad.device_bytes() : bad.smallest_device_bytes;
    if (!bisect && bad_bytes > good.device_bytes()) {
      const double slope =
          static_cast<double>(bad_bytes - good.device_bytes()) / static_cast<double>(width);
      const double guess = static_cast<double>(good.batch) +
                           static_cast<double>(budget - good.device_bytes()) / slope;
      mid = std::min(bad.batch - 1, std::max(good.batch + 1, static_cast<int64_t>(guess)));
    }
    SizeRow next = evaluate(mid);
    if (fits(next))
      good = std::move(next);
    else
      bad = std::move(next);
    bisect = !bisect && 2 * (bad.batch - good.batch) > width;
  }
  out.row = fastest(std::move(good));
  out.over_bytes = bad.ok() ? bad.device_bytes() : bad.smallest_device_bytes;
  return out;
}

std::string checkpoints_text(const std::vector<std::string>& names, size_t max_chars) {
  if (names.empty()) return "(all activations kept)";
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  if (all.size() <= max_chars || names.size() <= 2) return all;
  // Keep the first and the last names whole and say how many there are.
  const std::string tail =
      ", ..., " + names.back() + " (" + std::to_string(names.size()) + " in all)";
  std::string head = names[0];
  for (size_t i = 1;
       i + 1 < names.size() && head.size() + names[i].size() + 2 + tail.size() <= max_chars; ++i) {
    head += ", " + names[i];
  }
  return head + tail;
}

}  // namespace cli
}  // namespace remat
