// `remat compile`: model template or ONNX file -> plan file, with the plan's figures on stdout.
#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "io/atomic_file.h"
#include "cli/command_flags.h"
#include "cli/commands.h"
#include "cli/path_collisions.h"
#include "compiler/templates/aliases.h"
#include "compiler/optimizer.h"
#include "plan/half_float.h"
#include "plan/ops.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"

namespace remat {
namespace cli {

compiler::FiniteChecks finite_checks_option(const Args& args) {
  const std::string value = args.text("--finite-checks", "on");
  compiler::FiniteChecks checks;
  if (!compiler::parse_finite_checks(value, &checks)) {
    throw UsageError("--finite-checks '" + value + "': expected on, atomic or off");
  }
  return checks;
}

bool eval_program_option(const Args& args) {
  const std::string value = args.text("--eval-program", "on");
  if (value != "on" && value != "off")
    throw UsageError("--eval-program '" + value + "': expected on or off");
  return value == "on";
}

compiler::MatmulPrecision matmul_precision_option(const Args& args) {
  const std::string value = args.text("--matmul-precision", "fp32");
  compiler::MatmulPrecision precision;
  if (!compiler::parse_matmul_precision(value, &precision)) {
    throw UsageError("--matmul-precision '" + value + "': expected fp32 or tf32");
  }
  return precision;
}

compiler::Precision precision_option(const Args& args) {
  const std::string value = args.text("--precision", "fp32");
  compiler::Precision precision;
  if (!compiler::parse_precision(value, &precision)) {
    throw UsageError("--precision '" + value + "': expected fp32, bf16 or fp16");
  }
  return precision;
}

std::string loss_scale_option(const Args& args, compiler::Precision precision) {
  const std::string value = args.text("--loss-scale", "");
  if (args.has("--loss-scale") && value.empty())
    throw UsageError("--loss-scale '': expected off or dynamic[:init=S][,interval=N]");
  try {
    compiler::parse_loss_scale(value, precision);
  } catch (const compiler::CompileError& e) {
    std::string detail = e.what();
    for (const std::string& prefix : {"model '" + value + "': ", "loss scale '" + value + "': "}) {
      if (detail.compare(0, prefix.size(), prefix) == 0) {
        detail.erase(0, prefix.size());
        break;
      }
    }
    throw UsageError("--loss-scale '" + value + "': " + detail);
  }
  return value;
}

compiler::DataParallel data_parallel_option(const Args& args) {
  compiler::DataParallel d;
  d.enabled = args.has("--data-parallel");
  if (args.has("--bucket-size") && !d.enabled)
    throw UsageError("--bucket-size applies to --data-parallel");
  d.bucket_bytes = args.size("--bucket-size", compiler::kDefaultBucketBytes);
  if (d.bucket_bytes == 0) throw UsageError("--bucket-size 0: expected 1 byte or more");
  return d;
}

compiler::AttentionKernel attention_option(const Args& args) {
  const std::string value = args.text("--attention", "fused");
  compiler::AttentionKernel kernel;
  if (!compiler::parse_attention_kernel(value, &kernel)) {
    throw UsageError("--attention '" + value + "': expected fused or unfused");
  }
  return kernel;
}

std::string optimizer_option(const Args& args, const std::string& fallback) {
  const std::string text = args.text("--optimizer", fallback);
  try {
    compiler::parse_optimizer(text);
  } catch (const compiler::CompileError& e) {
    // The compiler parses the spec as it parses a model template, and its key=value messages
    // begin "model 'SPEC': "; on the command line that spec is the --optimizer value.
    std::string detail = e.what();
    for (const std::string& prefix : {"model '" + text + "': ", "optimizer '" + text + "': "}) {
      if (detail.compare(0, prefix.size(), prefix) == 0) {
        detail.erase(0, prefix.size());
        break;
      }
    }
    throw UsageError("--optimizer '" + text + "': " + detail);
  }
  return text;
}

std::string arena_budget_flag(const Args& args) {
  if (!args.has("--budget")) return "--arena-budget";
  if (args.has("--arena-budget")) {
    throw UsageError(
        "--budget and --arena-budget: give one (--budget is the deprecated name of "
        "--arena-budget)");
  }
  std::fprintf(stderr, "remat: --budget is deprecated; use --arena-budget (the same meaning)\n");
  return "--budget";
}

compiler::CompileOptions compile_options(const Args& args, const std::string& model) {
  compiler::CompileOptions o;
  o.model = model;
  o.loss = args.text("--loss", "");
  o.batch = args.integer("--batch", 1, 1 << 24, 32);
  o.optimizer = optimizer_option(args, compiler::default_optimizer(model));
  o.seed = static_cast<uint64_t>(args.integer("--seed", 0, INT64_MAX, 0));
  // The budgets (docs/sizing.md, "Budgets"); --budget is the deprecated name of --arena-budget.
  const std::string arena_flag = arena_budget_flag(args);
  o.arena_budget = args.size(arena_flag, 0);
  o.device_budget = args.size("--device-budget", 0);
  // A budget without a strategy asks for the fastest plan that fits it.
  o.strategy =
      args.text("--strategy", o.arena_budget != 0 || o.device_budget != 0 ? "auto" : o.strategy);
  if (o.arena_budget != 0 && o.strategy != "budget" && o.strategy != "auto") {
    throw UsageError(arena_flag + " applies to --strategy budget or auto");
  }
  if (args.has("--host-budget")) {
    if (o.strategy != "auto") throw UsageError("--host-budget applies to --strategy auto");
    if (o.device_budget == 0)
      throw UsageError("--host-budget needs --device-budget (spilling fits the device budget)");
    o.host_budget = args.size("--host-budget", 0);
  }
  // The backend the plan is for picks the alignment and the cost model's defaults (its
  // profile); the flags override the model. A name with no profile keeps the CPU's here:
  // `train` then gets the runtime's message for it (`compile` checks --backend itself).
  try {
    o.target(compiler::target_profile(args.text("--backend", "cpu")));
  } catch (const compiler::CompileError&) {}
  o.copy_bandwidth = args.real("--copy-bandwidth", o.copy_bandwidth);
  o.compute_rate = args.real("--compute-rate", o.compute_rate);
  o.finite_checks = finite_checks_option(args);
  o.eval_program = eval_program_option(args);
  o.matmul_precision = matmul_precision_option(args);
  o.attention = attention_option(args);
  o.precision = precision_option(args);
  o.loss_scale = loss_scale_option(args, o.precision);
  o.data_parallel = data_parallel_option(args);
  return o;
}

void print_report(const compiler::CompileReport& r, const char* backend) {
  for (const std::string& w : r.warnings) std::fprintf(stderr, "remat: warning: %s\n", w.c_str());
  std::printf("model:        %s\n", r.model.c_str());
  std::printf("batch:        %lld\n", static_cast<long long>(r.batch));
  std::printf("optimizer:    %s\n", r.optimizer.c_str());
  std::printf("strategy:     %s\n", r.strategy.c_str());
  std::string checkpoints;
  for (const std::string& c : r.checkpoints) checkpoints += (checkpoints.empty() ? "" : ", ") + c;
  std::printf("checkpoints:  %s\n",
              checkpoints.empty() ? "(all activations kept)" : checkpoints.c_str());
  if (!r.nested.empty()) {
    std::string nested;
    for (const std::string& c : r.nested) nested += (nested.empty() ? "" : ", ") + c;
    std::printf("nested:       %s (recomputed once per segment, then held)\n", nested.c_str());
  }
  if (r.strategy == "auto") {
    std::printf("search:       %zu schedules planned%s\n", r.schedules_planned,
                r.exhaustive ? ", every keep/recompute/spill assignment among them" : "");
  }
  std::printf("parameters:   %llu\n", static_cast<unsigned long long>(r.param_count));
  if (r.eval_ops > 0) {
    std::printf("ops:          %zu (%zu of them the eval program's)\n", r.op_count, r.eval_ops);
  } else {
    std::printf("ops:          %zu (no eval program)\n", r.op_count);
  }
  std::printf("arena:        %llu bytes (%s)\n", static_cast<unsigned long long>(r.arena_bytes),
              format_bytes(r.arena_bytes).c_str());
  std::printf("lower bound:  %llu bytes (%s), planner efficiency %.1f%%\n",
              static_cast<unsigned long long>(r.lower_bound), format_bytes(r.lower_bound).c_str(),
              r.arena_bytes
                  ? 100.0 * static_cast<double>(r.lower_bound) / static_cast<double>(r.arena_bytes)
                  : 100.0);
  std::printf("persistent:   %llu bytes (%s)\n",
              static_cast<unsigned long long>(r.persistent_bytes),
              format_bytes(r.persistent_bytes).c_str());
  std::printf("host spill:   %llu bytes (%s), %zu checkpoints spilled",
              static_cast<unsigned long long>(r.host_bytes), format_bytes(r.host_bytes).c_str(),
              r.spilled.size());
  if (!r.spilled.empty()) {
    std::printf(
        "; copies %.3g s modelled, %.0f%% hidden behind compute (copies %.3g bytes/s, compute %.3g "
        "FLOP/s)",
        r.copy_seconds, 100.0 * r.hidden_copy_seconds / r.copy_seconds, r.copy_bandwidth,
        r.compute_rate);
  }
  std::printf("\n");
  if (r.device_budget > 0) {
    std::printf(
        "device:       %llu bytes of the %llu-byte device budget (arena + persistent%s)\n",
        static_cast<unsigned long long>(r.arena_bytes + r.persistent_bytes + r.workspace_bytes),
        static_cast<unsigned long long>(r.device_budget),
        r.workspace_bytes > 0 ? " + workspace" : "");
  }
  std::printf("step flops:   %.3g (forward %.3g, recomputed %.1f%% of the step)\n", r.step_flops,
              r.forward_flops, r.step_flops > 0 ? 100.0 * r.recomputed_flops / r.step_flops : 0.0);
  std::printf("matmuls:      %s\n", compiler::matmul_precision_name(r.matmul_precision));
  std::printf("precision:    %s%s\n", compiler::precision_name(r.precision),
              r.precision == compiler::Precision::kFp32
                  ? ""
                  : " activations (parameters, optimizer state and their gradients float32)");
  if (r.loss_scale != "off") {
    std::printf("loss scale:   %s (doubles after that many finite steps, halves on an overflow)\n",
                r.loss_scale.c_str());
  }
  if (r.workspace_bytes > 0) {
    const WideningRule rule = compiler::target_profile(backend).widening;
    const bool gpu = rule == WideningRule::kGpu || rule == WideningRule::kGpuHalfOperands;
    std::printf("workspace:    %llu bytes (%s) beside the arena: the %s backend's %s\n",
                static_cast<unsigned long long>(r.workspace_bytes),
                format_bytes(r.workspace_bytes).c_str(), backend,
                gpu ? "float32 copies of one op's 16-bit tensors and its scratch"
                    : "float32 copies of one op's 16-bit tensors");
  }
  if (r.allreduce_buckets > 0) {
    std::printf(
        "data-parallel: %zu buckets (the gradients, and batch norms' running statistics) "
        "averaged over the ranks; the session needs a communicator\n",
        r.allreduce_buckets);
  }
  std::printf("attention:    %zu fused op%s\n", r.fused_attention_ops,
              r.fused_attention_ops == 1 ? "" : "s");
  std::printf("predicted:    %.4g s per step (cost model: %.3g FLOP/s, copies %.3g bytes/s)\n",
              r.predicted_seconds, r.compute_rate, r.copy_bandwidth);
}

// The plan as a C header for firmware: a const, 8-byte aligned array (remat_plan_open needs
// the alignment) and its length, named after the file.
std::vector<uint8_t> c_header(const std::vector<uint8_t>& plan, const std::string& path) {
  std::string stem =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  stem = stem.substr(0, stem.size() - 2);
  for (char& c : stem) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (stem.empty() || std::isdigit(static_cast<unsigned char>(stem[0]))) stem = "plan_" + stem;
  std::string macro = stem;
  for (char& c : macro) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // The op codes the plan uses, first: a firmware build compiles only their kernels and rules
  // (plan/op_subset.h), reading this part alone (REMAT_PLAN_OPS_ONLY).
  const fb::Plan* root = fb::GetPlan(plan.data());
  std::vector<bool> used(kOpCodeCount, false);
  std::string names, codes;
  for (uint32_t i = 0; i < root->ops()->size(); ++i) used[root->ops()->Get(i)->code()] = true;
  for (uint16_t c = 1; c < kOpCodeCount; ++c) {
    if (!used[c]) continue;
    codes += (codes.empty() ? "" : ", ") + std::to_string(c);
    names += std::string(names.empty() ? "" : " ") + op_name(c);
  }
  // Whether a tensor is 16-bit: a build without them leaves the CPU backend's widening out.
  bool half_floats = false;
  for (uint32_t i = 0; i < root->tensors()->size(); ++i)
    half_floats =
        half_floats || is_half_float(static_cast<uint8_t>(root->tensors()->Get(i)->dtype()));
  std::string text = "/* Generated by `remat compile`: a remat plan as a C array. */\n";
  text += "/* The op codes the plan uses: " + names + " */\n";
  text += "#define " + macro + "_OP_CODES " + codes + "\n";
  text += "/* Whether the plan has 16-bit float tensors. */\n";
  text += "#define " + macro + "_HALF_FLOATS " + (half_floats ? "1" : "0") + "\n";
  text += "#ifndef REMAT_PLAN_OPS_ONLY\n#include <stddef.h>\n\n";
  text += "/* 8-byte aligned: remat_plan_open() reads the plan in place. */\n";
  text += "static const union { unsigned char bytes[" + std::to_string(plan.size()) +
          "]; double align; } " + stem + "_storage = {{\n";
  char buffer[8];
  for (size_t i = 0; i < plan.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%s0x%02x,", i % 16 == 0 ? "  " : " ", plan[i]);
    text += buffer;
    if (i % 16 == 15 || i + 1 == plan.size()) text += "\n";
  }
  text += "}};\n#define " + stem + "_bytes (" + stem + "_storage.bytes)\n";
  text += "static const size_t " + stem + "_size = " + std::to_string(plan.size()) + ";\n";
  // The regions as the runtime reads them from this plan, so that firmware declares static
  // buffers of exactly these sizes.
  remat_plan* opened = nullptr;
  char message[256] = "";
  remat_plan_memory_info memory{};
  if (remat_plan_open(plan.data(), plan.size(), &opened, message, sizeof(message)) != REMAT_OK ||
      remat_plan_memory(opened, &memory) != REMAT_OK) {
    remat_plan_close(opened);
    throw std::runtime_error(std::string("the compiled plan does not open: ") + message);
  }
  text += "/* Bytes of each region (remat_plan_memory), and the alignment each base needs. */\n";
  text += "#define " + macro + "_ARENA_BYTES " + std::to_string(memory.arena_bytes) + "u\n";
  text +=
      "#define " + macro + "_PERSISTENT_BYTES " + std::to_string(memory.persistent_bytes) + "u\n";
  text += "#define " + macro + "_HOST_BYTES " + std::to_string(memory.host_bytes) + "u\n";
  text += "#define " + macro + "_ALIGNMENT " + std::to_string(memory.alignment) + "u\n";
  // Each input and label binding's name and bytes, in binding order: INPUT0, INPUT1, LABEL0, ...
  text += "/* The bindings a step reads (remat_plan_binding): names and bytes. */\n";
  const struct {
    remat_binding_kind kind;
    const char* what;
  } kinds[] = {{REMAT_BINDING_INPUT, "_INPUT"}, {REMAT_BINDING_LABEL, "_LABEL"}};
  for (const auto& k : kinds) {
    uint32_t count = 0;
    remat_plan_binding_count(opened, k.kind, &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      if (remat_plan_binding(opened, k.kind, i, &info) != REMAT_OK) continue;
      const std::string prefix = "#define " + macro + k.what + std::to_string(i);
      text += prefix + "_NAME \"" + info.name + "\"\n";
      text += prefix + "_BYTES " + std::to_string(info.bytes) + "u\n";
    }
  }
  remat_plan_close(opened);
  text += "#endif\n";
  return std::vector<uint8_t>(text.begin(), text.end());
}

int run_compile(const std::vector<std::string>& argv) {
  const Args args = parse_args("compile", argv);
  if (args.positional().size() != 1) throw UsageError("compile takes exactly one MODEL");
  if (!args.has("-o") && !args.has("--emit-c"))
    throw UsageError("compile needs -o FILE.rplan (or --emit-c FILE.h)");
  if (args.has("--backend"))
    compiler::target_profile(args.text("--backend", ""));  // Names a known backend.
  const compiler::CompileOptions options = compile_options(args, args.positional()[0]);
  // What to write: the plan (-o; a name ending in .h gets the C header) and the C header
  // (--emit-c).
  struct Output {
    std::string path;
    bool header;
  };
  std::vector<Output> outputs;
  if (args.has("-o")) {
    const std::string out = args.text("-o", "");
    outputs.push_back({out, out.size() > 2 && out.compare(out.size() - 2, 2, ".h") == 0});
  }
  if (args.has("--emit-c")) outputs.push_back({args.text("--emit-c", ""), true});
  for (const Output& o : outputs)
    io::require_writable(o.path);  // Before compiling, which takes minutes for large models.
  std::vector<FileArgument> files;
  if (args.has("-o")) files.push_back({"-o", args.text("-o", ""), true});
  if (args.has("--emit-c")) files.push_back({"--emit-c", args.text("--emit-c", ""), true});
  add_model_file(args.positional()[0], &files);
  refuse_colliding_files(files);
  const compiler::CompileResult result = compiler::compile(options);
  std::vector<std::vector<uint8_t>> contents;
  for (const Output& o : outputs)
    contents.push_back(o.header ? c_header(result.plan, o.path) : result.plan);
  for (size_t i = 0; i < outputs.size(); ++i) io::write_file(outputs[i].path, contents[i]);
  print_report(result.report, compiler::target_profile(args.text("--backend", "cpu")).name);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::printf("wrote %s (%zu bytes", outputs[i].path.c_str(), contents[i].size());
    if (outputs[i].header) std::printf(", a plan of %zu bytes", result.plan.size());
    std::printf(")\n");
  }
  return 0;
}

}  // namespace cli
}  // namespace remat
