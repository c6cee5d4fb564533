// `remat compile`: model template -> plan file, with the plan's figures on stdout.
#include <cstdio>

#include "cli/commands.h"

namespace remat {
namespace cli {

const std::vector<std::string> kCompileFlags = {"--batch", "--optimizer", "--seed", "--strategy", "--budget",
                                                 "--device-budget", "--copy-bandwidth", "--compute-rate"};

compiler::CompileOptions compile_options(const Args& args, const std::string& model) {
  compiler::CompileOptions o;
  o.model = model;
  o.batch = args.integer("--batch", 1, 1 << 24, 32);
  o.optimizer = args.text("--optimizer", o.optimizer);
  o.seed = static_cast<uint64_t>(args.integer("--seed", 0, INT64_MAX, 0));
  o.strategy = args.text("--strategy", o.strategy);
  o.budget = args.size("--budget", 0);
  if (o.budget != 0 && o.strategy != "budget") throw UsageError("--budget applies to --strategy budget");
  o.device_budget = args.size("--device-budget", 0);
  o.copy_bandwidth = args.real("--copy-bandwidth", o.copy_bandwidth);
  o.compute_rate = args.real("--compute-rate", o.compute_rate);
  return o;
}

void print_report(const compiler::CompileReport& r) {
  std::printf("model:        %s\n", r.model.c_str());
  std::printf("batch:        %lld\n", static_cast<long long>(r.batch));
  std::printf("optimizer:    %s\n", r.optimizer.c_str());
  std::printf("strategy:     %s\n", r.strategy.c_str());
  std::string checkpoints;
  for (const std::string& c : r.checkpoints) checkpoints += (checkpoints.empty() ? "" : ", ") + c;
  std::printf("checkpoints:  %s\n", checkpoints.empty() ? "(all activations kept)" : checkpoints.c_str());
  std::printf("parameters:   %llu\n", static_cast<unsigned long long>(r.param_count));
  std::printf("ops:          %zu\n", r.op_count);
  std::printf("arena:        %llu bytes (%s)\n", static_cast<unsigned long long>(r.arena_bytes),
              format_bytes(r.arena_bytes).c_str());
  std::printf("lower bound:  %llu bytes (%s), planner efficiency %.1f%%\n",
              static_cast<unsigned long long>(r.lower_bound), format_bytes(r.lower_bound).c_str(),
              r.arena_bytes ? 100.0 * static_cast<double>(r.lower_bound) / static_cast<double>(r.arena_bytes) : 100.0);
  std::printf("persistent:   %llu bytes (%s)\n", static_cast<unsigned long long>(r.persistent_bytes),
              format_bytes(r.persistent_bytes).c_str());
  std::printf("host spill:   %llu bytes (%s), %zu checkpoints spilled", static_cast<unsigned long long>(r.host_bytes),
              format_bytes(r.host_bytes).c_str(), r.spilled.size());
  if (!r.spilled.empty()) {
    std::printf("; copies %.3g s modelled, %.0f%% hidden behind compute", r.copy_seconds,
                100.0 * r.hidden_copy_seconds / r.copy_seconds);
  }
  std::printf("\n");
  if (r.device_budget > 0) {
    std::printf("device:       %llu bytes of the %llu-byte budget (arena + persistent)\n",
                static_cast<unsigned long long>(r.arena_bytes + r.persistent_bytes),
                static_cast<unsigned long long>(r.device_budget));
  }
  std::printf("step flops:   %.3g (forward %.3g, recomputed %.1f%% of the step)\n", r.step_flops,
              r.forward_flops, r.step_flops > 0 ? 100.0 * r.recomputed_flops / r.step_flops : 0.0);
}

int run_compile(const std::vector<std::string>& argv) {
  std::vector<std::string> valued = kCompileFlags;
  valued.push_back("-o");
  const Args args(argv, valued, {});
  if (args.positional().size() != 1) throw UsageError("compile takes exactly one MODEL");
  if (!args.has("-o")) throw UsageError("compile needs -o FILE.rplan");
  const compiler::CompileResult result = compiler::compile(compile_options(args, args.positional()[0]));
  write_file(args.text("-o", ""), result.plan);
  print_report(result.report);
  std::printf("wrote %s (%zu bytes)\n", args.text("-o", "").c_str(), result.plan.size());
  return 0;
}

}  // namespace cli
}  // namespace remat
