// The compile pipeline: template -> graph -> autodiff + optimizer -> schedule -> memory -> plan.
#include "compiler/compiler.h"

#include <cstdio>

#include "backends/device_profiles.h"
#include "compiler/strategies/auto.h"
#include "compiler/autodiff.h"
#include "compiler/strategies/budget.h"
#include "compiler/eval_program.h"
#include "compiler/optimizer.h"
#include "compiler/precision.h"
#include "compiler/running_stats.h"
#include "compiler/schedule.h"
#include "compiler/strategies/spill.h"
#include "compiler/strategies/sqrt.h"
#include "compiler/onnx/import.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

const DeviceProfile& target_profile(const std::string& backend) {
  const DeviceProfile* profile = find_device_profile(backend.c_str());
  if (profile != nullptr) return *profile;
  std::string known;
  for (const DeviceProfile& p : kDeviceProfiles)
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  throw CompileError("no device profile for backend '" + backend + "' (known: " + known + ")");
}

namespace {

// What the device budget leaves for the arena and the persistent region once the target
// backend's workspace (|workspace| bytes, beside them on the same device) is set
// aside: what the strategies and the spill search fit. 0 when no device budget was given.
uint64_t regions_budget(const CompileOptions& options, uint64_t workspace) {
  if (options.device_budget == 0) return 0;
  if (workspace >= options.device_budget) {
    throw CompileError("the workspace alone (" + std::to_string(workspace) +
                       " bytes beside the arena, for the plan's 16-bit tensors) fills the device "
                       "budget of " +
                       std::to_string(options.device_budget) + " bytes");
  }
  return options.device_budget - workspace;
}

// The arena budget of strategy 'budget': --arena-budget, or else |regions| (the device budget
// less the workspace) less the persistent bytes (parameters and optimizer state: the
// same whatever the strategy), as `remat size` gives it (docs/sizing.md, "Budgets").
uint64_t budget_strategy_arena(const Graph& graph, const CompileOptions& options,
                               uint64_t regions) {
  if (options.arena_budget > 0) return options.arena_budget;
  if (options.device_budget == 0) {
    throw CompileError(
        "strategy 'budget' needs an arena budget (--arena-budget BYTES) or a device budget "
        "(--device-budget BYTES)");
  }
  const uint64_t persistent = plan_memory(graph, options.alignment).persistent_size;
  if (persistent >= regions) {
    throw CompileError(
        "strategy 'budget': the persistent region alone (" + std::to_string(persistent) +
        " bytes) fills the device budget of " + std::to_string(options.device_budget) + " bytes" +
        (regions < options.device_budget
             ? " less the workspace's " + std::to_string(options.device_budget - regions) + " bytes"
             : ""));
  }
  return regions - persistent;
}

// The strategies and the spill search met their budgets without the eval program, which is
// placed apart and needs less than a step; should it ever need more, the plan is refused here.
// So is a plan whose final workspace (|workspace|) outgrew the one they were given.
void check_budgets_hold(const CompileOptions& options, const MemoryPlan& memory,
                        uint64_t workspace) {
  const uint64_t device = memory.arena_size + memory.persistent_size + workspace;
  if (options.device_budget > 0 && device > options.device_budget &&
      memory.eval_arena_size <= memory.step_arena_size) {
    throw CompileError("the workspace (" + std::to_string(workspace) +
                       " bytes) takes the plan to " + std::to_string(device) +
                       " bytes, over the device budget of " +
                       std::to_string(options.device_budget));
  }
  if (memory.eval_arena_size <= memory.step_arena_size) return;
  const bool over_budget = (options.strategy == "budget" || options.strategy == "auto") &&
                           options.arena_budget > 0 && memory.arena_size > options.arena_budget;
  const bool over_device = options.device_budget > 0 && device > options.device_budget;
  if (over_budget || over_device) {
    throw CompileError("the eval program takes the arena to " + std::to_string(memory.arena_size) +
                       " bytes, over the " +
                       (over_budget ? "arena budget of " + std::to_string(options.arena_budget)
                                    : "device budget of " + std::to_string(options.device_budget)) +
                       " bytes; compile with --eval-program off");
  }
}

}  // namespace

CompileResult compile(const CompileOptions& options) {
  if (options.alignment == 0 || (options.alignment & (options.alignment - 1)) != 0) {
    throw CompileError("alignment " + std::to_string(options.alignment) + " is not a power of two");
  }
  CompileResult result;
  if (is_onnx_model(options.model)) {
    OnnxImport imported =
        import_onnx(options.model, options.batch, parse_onnx_loss(options.loss), options.attention);
    result.graph = std::move(imported.graph);
    result.report.warnings = std::move(imported.warnings);
  } else {
    if (!options.loss.empty()) {
      throw CompileError("--loss is for ONNX models; template '" + options.model +
                         "' brings its own loss");
    }
    result.graph = build_template(options.model, options.batch, options.attention);
  }
  apply_precision(result.graph, options.precision);
  const size_t forward_ops = result.graph.ops.size();
  const std::vector<Op> forward = result.graph.ops;  // for the eval program, before any rewrite
  const OptimizerSpec optimizer = parse_optimizer(options.optimizer);
  const LossScaleSpec loss_scale = parse_loss_scale(options.loss_scale, options.precision);
  if (loss_scale.dynamic && options.finite_checks == FiniteChecks::kOff) {
    throw CompileError(
        "dynamic loss scaling finds overflowing steps with the non-finite guard: use "
        "--finite-checks on or atomic, or --loss-scale off");
  }
  add_loss_scaling_state(result.graph, loss_scale);
  if (options.data_parallel.enabled && options.data_parallel.bucket_bytes == 0)
    throw CompileError("the bucket size of data-parallel training must be at least 1 byte");
  append_backward_and_updates(result.graph, optimizer, options.finite_checks,
                              options.data_parallel);
  append_running_stat_updates(result.graph);
  if (options.data_parallel.enabled) average_running_stats(result.graph);
  if (!(options.copy_bandwidth > 0) || !(options.compute_rate > 0)) {
    throw CompileError("copy bandwidth and compute rate must be positive");
  }
  // Recomputation repeats ops and spills add copies, which widen nothing new: the workspace of
  // the step's ops is the plan's (check_budgets_hold checks it).
  const uint64_t workspace = workspace_bytes(result.graph, options.widening);
  const uint64_t regions = regions_budget(options, workspace);
  SpillOptions spill;
  spill.device_budget = regions;
  spill.copy_bandwidth = options.copy_bandwidth;
  spill.compute_rate = options.compute_rate;
  spill.asynchronous_copies = options.asynchronous_copies;
  spill.alignment = options.alignment;
  std::vector<int> checkpoints, nested;
  SpillReport spilled;
  CompileReport& r = result.report;
  if (options.strategy == "auto") {
    AutoOptions automatic;
    automatic.arena_budget = options.arena_budget;
    automatic.device_budget = regions;
    automatic.host_budget = options.host_budget;
    automatic.cost = spill;
    automatic.smallest = options.auto_smallest;
    AutoSchedule chosen;
    try {
      chosen = auto_schedule(result.graph, forward_ops, automatic);
    } catch (const NoScheduleFits& e) {  // its message and device bytes with the workspace
      if (regions == 0 || workspace == 0) throw;
      throw NoScheduleFits(std::string(e.what()) + " (the device budget of " +
                               std::to_string(options.device_budget) +
                               " bytes less the workspace's " + std::to_string(workspace) +
                               " bytes)",
                           e.smallest_device + workspace);
    }
    result.graph = std::move(chosen.graph);
    checkpoints = std::move(chosen.checkpoints);
    nested = std::move(chosen.nested);
    spilled.spilled = std::move(chosen.spilled);
    spilled.copy_seconds = chosen.copy_seconds;
    spilled.hidden_seconds = chosen.hidden_seconds;
    r.schedules_planned = chosen.planned;
    r.exhaustive = chosen.exhaustive;
  } else {
    if (options.strategy == "budget") {
      checkpoints = budget_checkpoints(result.graph, forward_ops,
                                       budget_strategy_arena(result.graph, options, regions),
                                       options.alignment);
    } else if (options.strategy == "sqrt") {
      checkpoints = sqrt_checkpoints(result.graph, forward_ops, options.alignment);
    } else {
      checkpoints = choose_checkpoints(result.graph, forward_ops, options.strategy);
    }
    if (options.strategy != "none") {
      apply_recompute(result.graph, forward_ops, checkpoints);
      // What the strategy keeps from forward to backward is a checkpoint in the plan
      // (docs/architecture.md, "Roles and regions"); the loss keeps its own role.
      mark_checkpoints(result.graph, checkpoints);
    }
    spilled = apply_spills(result.graph, forward_ops, checkpoints, spill);
  }
  r.predicted_seconds = predicted_step_seconds(result.graph, spill);
  if (options.eval_program) append_eval_program(result.graph, forward);
  result.memory = plan_memory(result.graph, options.alignment);
  r.workspace_bytes = workspace_bytes(result.graph, options.widening);
  check_budgets_hold(options, result.memory, r.workspace_bytes);

  r.model = options.model;
  r.strategy = options.strategy;
  r.optimizer = optimizer.text;
  r.batch = options.batch;
  r.arena_bytes = result.memory.arena_size;
  r.persistent_bytes = result.memory.persistent_size;
  r.host_bytes = result.memory.host_size;
  r.lower_bound = result.memory.lower_bound;
  if (options.strategy != "none") {
    for (int t : checkpoints) r.checkpoints.push_back(result.graph.tensors[t].name);
  }
  for (int t : nested) r.nested.push_back(result.graph.tensors[t].name);
  r.arena_budget = options.arena_budget;
  r.matmul_precision = options.matmul_precision;
  r.precision = options.precision;
  if (loss_scale.dynamic) {
    char text[96];
    std::snprintf(text, sizeof(text), "dynamic:init=%.9g,interval=%u",
                  static_cast<double>(loss_scale.init), loss_scale.interval);
    r.loss_scale = text;
  }
  for (size_t i = 0; i < forward_ops; ++i)
    r.fused_attention_ops += forward[i].code == OpCode::kAttention ? 1 : 0;
  r.device_budget = options.device_budget;
  r.host_budget = options.host_budget;
  for (int t : spilled.spilled) r.spilled.push_back(result.graph.tensors[t].name);
  r.copy_seconds = spilled.copy_seconds;
  r.hidden_copy_seconds = spilled.hidden_seconds;
  r.copy_bandwidth = options.copy_bandwidth;
  r.compute_rate = options.compute_rate;
  for (const Op& op : result.graph.ops)
    r.allreduce_buckets += op.code == OpCode::kAllreduceStart ? 1 : 0;
  r.op_count = result.graph.ops.size();
  r.tensor_count = result.graph.tensors.size();
  for (int p : result.graph.params)
    r.param_count += static_cast<uint64_t>(result.graph.tensors[p].numel());
  r.eval_ops = result.graph.eval_ops;
  for (size_t i = 0; i < result.graph.ops.size(); ++i) {
    const Op& op = result.graph.ops[i];
    if (op.phase == Phase::kEval) continue;
    r.step_flops += op.flops;
    if (op.phase == Phase::kForward) r.forward_flops += op.flops;
    if (op.phase == Phase::kRecompute) r.recomputed_flops += op.flops;
  }
  result.plan = write_plan(result.graph, result.memory, r, options.seed);
  return result;
}

}  // namespace compiler
}  // namespace remat
