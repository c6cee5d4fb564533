// `remat inspect`: what a plan holds, as text or JSON (field names documented in docs/cli.md).
#include <cstdio>
#include <string>

#include "cli/command_flags.h"
#include "cli/commands.h"
#include "cli/json_text.h"
#include "plan/ops.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"

namespace remat {
namespace cli {
namespace {

const char* const kRoles[] = {"input",      "label",      "param",   "state", "grad",
                              "activation", "checkpoint", "scratch", "loss"};
const char* const kRegions[] = {"arena", "persistent", "host"};
const char* const kPhases[] = {"forward", "backward", "recompute", "update", "copy", "eval"};
const char* const kDtypes[] = {"f32", "f16", "bf16", "i32", "i64"};

// The phase is for reports only and the runtime does not verify it: a value past the known ones
// prints as "unknown".
const char* phase_name(fb::Phase phase) {
  const size_t index = static_cast<size_t>(phase);
  return index < sizeof(kPhases) / sizeof(kPhases[0]) ? kPhases[index] : "unknown";
}

std::string shape_text(const fb::Tensor* t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t->shape()->size(); ++d)
    s += (d ? ", " : "") + std::to_string(t->shape()->Get(d));
  return s + "]";
}

const char* name_of(const fb::Tensor* t) { return t->name() ? t->name()->c_str() : ""; }

void print_tensor_json(const fb::Tensor* t, uint32_t index, bool last) {
  std::printf(
      "    {\"index\": %u, \"name\": %s, \"dtype\": \"%s\", \"role\": \"%s\", \"region\": \"%s\", "
      "\"shape\": %s, \"offset\": %llu, \"bytes\": %llu}%s\n",
      index, json_string(name_of(t)).c_str(), kDtypes[static_cast<int>(t->dtype())],
      kRoles[static_cast<int>(t->role())], kRegions[static_cast<int>(t->region())],
      shape_text(t).c_str(), static_cast<unsigned long long>(t->offset()),
      static_cast<unsigned long long>(t->size()), last ? "" : ",");
}

}  // namespace

int run_inspect(const std::vector<std::string>& argv) {
  const Args args = parse_args("inspect", argv);
  if (args.positional().size() != 1) throw UsageError("inspect takes exactly one FILE.rplan");
  const std::string path = args.positional()[0];
  const std::vector<uint8_t> bytes = read_plan_file(path);
  char message[512];
  remat_plan* plan = nullptr;
  const remat_status status =
      remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message));
  if (status != REMAT_OK) throw Failure(path + ": " + remat_status_string(status) + ": " + message);
  remat_plan_close(plan);
  const fb::Plan* root = fb::GetPlan(bytes.data());
  const auto* prov = root->provenance();
  const auto* tensors = root->tensors();
  const bool json = args.has("--json");
  auto str = [](const flatbuffers::String* s) { return s ? s->c_str() : ""; };
  const uint64_t lower = prov ? prov->lower_bound() : 0;
  // remat_plan_open refused any value the schema does not name; the compiler's enum has the
  // schema's values (plan_writer.cc checks them).
  const char* precision = compiler::matmul_precision_name(
      static_cast<compiler::MatmulPrecision>(root->matmul_precision()));

  // Tensors per dtype: a 16-bit plan's activations (compiler/precision.h) show here.
  uint32_t per_dtype[5] = {0, 0, 0, 0, 0};
  for (uint32_t i = 0; i < tensors->size(); ++i)
    ++per_dtype[static_cast<int>(tensors->Get(i)->dtype())];
  std::string dtypes, dtypes_json;
  for (int d = 0; d < 5; ++d) {
    if (per_dtype[d] == 0) continue;
    dtypes +=
        std::string(dtypes.empty() ? "" : ", ") + std::to_string(per_dtype[d]) + " " + kDtypes[d];
    dtypes_json += std::string(dtypes_json.empty() ? "" : ", ") + "\"" + kDtypes[d] +
                   "\": " + std::to_string(per_dtype[d]);
  }

  if (json) std::printf("{\n  \"format_version\": %u,\n", root->format_version());
  if (!args.has("--ops") && !args.has("--tensors") && !args.has("--params")) {
    std::string checkpoints;
    for (uint32_t i = 0; prov && prov->checkpoints() && i < prov->checkpoints()->size(); ++i) {
      checkpoints +=
          (i ? ", " : "") + std::string(json ? json_string(prov->checkpoints()->Get(i)->c_str())
                                             : prov->checkpoints()->Get(i)->str());
    }
    const double share =
        prov && prov->step_flops() > 0 ? prov->recomputed_flops() / prov->step_flops() : 0.0;
    if (json) {
      std::printf(
          "  \"model\": %s,\n  \"batch\": %u,\n  \"strategy\": %s,\n  \"optimizer\": %s,\n  "
          "\"compiler\": %s,\n",
          json_string(prov ? str(prov->model()) : "").c_str(), prov ? prov->batch() : 0,
          json_string(prov ? str(prov->strategy()) : "").c_str(),
          json_string(prov ? str(prov->optimizer()) : "").c_str(),
          json_string(prov ? str(prov->compiler()) : "").c_str());
      std::printf(
          "  \"checkpoints\": [%s],\n  \"arena_bytes\": %llu,\n  \"persistent_bytes\": %llu,\n"
          "  \"host_bytes\": %llu,\n  \"lower_bound_bytes\": %llu,\n  \"alignment\": %u,\n  "
          "\"ops\": %u,\n  \"eval_ops\": %u,\n"
          "  \"tensors\": %u,\n  \"step_flops\": %.6g,\n  \"recomputed_flops_share\": %.6f,\n  "
          "\"seed\": %llu,\n"
          "  \"spills\": %u,\n  \"device_budget_bytes\": %llu,\n  \"hidden_copy_share\": %.6f,\n"
          "  \"copy_bandwidth\": %.6g,\n  \"compute_rate\": %.6g,\n  \"matmul_precision\": "
          "\"%s\",\n  \"tensors_per_dtype\": {%s}\n}\n",
          checkpoints.c_str(), static_cast<unsigned long long>(root->arena_size()),
          static_cast<unsigned long long>(root->persistent_size()),
          static_cast<unsigned long long>(root->host_size()),
          static_cast<unsigned long long>(lower), root->alignment(), root->ops()->size(),
          root->eval_ops(), tensors->size(), prov ? prov->step_flops() : 0.0, share,
          static_cast<unsigned long long>(root->seed()), prov ? prov->spills() : 0u,
          static_cast<unsigned long long>(prov ? prov->device_budget() : 0),
          prov ? prov->hidden_copy_share() : 0.0, prov ? prov->copy_bandwidth() : 0.0,
          prov ? prov->compute_rate() : 0.0, precision, dtypes_json.c_str());
      return 0;
    }
    std::printf("plan:         %s (format %u, %zu bytes)\n", path.c_str(), root->format_version(),
                bytes.size());
    std::printf("made by:      %s\n", prov ? str(prov->compiler()) : "?");
    std::printf("model:        %s\n", prov ? str(prov->model()) : "?");
    std::printf("batch:        %u\n", prov ? prov->batch() : 0);
    std::printf("optimizer:    %s\n", prov ? str(prov->optimizer()) : "?");
    std::printf("strategy:     %s\n", prov ? str(prov->strategy()) : "?");
    std::printf("checkpoints:  %s\n",
                checkpoints.empty() ? "(all activations kept)" : checkpoints.c_str());
    std::printf("ops:          %u (eval program: %u)\ntensors:      %u (%s)\n", root->ops()->size(),
                root->eval_ops(), tensors->size(), dtypes.c_str());
    std::printf("arena:        %llu bytes (%s)\n",
                static_cast<unsigned long long>(root->arena_size()),
                format_bytes(root->arena_size()).c_str());
    std::printf("lower bound:  %llu bytes (%s), planner efficiency %.1f%%\n",
                static_cast<unsigned long long>(lower), format_bytes(lower).c_str(),
                root->arena_size()
                    ? 100.0 * static_cast<double>(lower) / static_cast<double>(root->arena_size())
                    : 100.0);
    std::printf("persistent:   %llu bytes (%s)\n",
                static_cast<unsigned long long>(root->persistent_size()),
                format_bytes(root->persistent_size()).c_str());
    std::printf(
        "host spill:   %llu bytes (%s), %u checkpoints spilled, %.0f%% of copy time hidden "
        "(modelled)\n",
        static_cast<unsigned long long>(root->host_size()), format_bytes(root->host_size()).c_str(),
        prov ? prov->spills() : 0u, prov ? 100.0 * prov->hidden_copy_share() : 0.0);
    std::printf("cost model:   copies %.3g bytes/s, compute %.3g FLOP/s\n",
                prov ? prov->copy_bandwidth() : 0.0, prov ? prov->compute_rate() : 0.0);
    std::printf("matmuls:      %s\n", precision);
    std::printf("alignment:    %u\nseed:         %llu\n", root->alignment(),
                static_cast<unsigned long long>(root->seed()));
    std::printf("step flops:   %.3g (recomputed %.1f%%)\n", prov ? prov->step_flops() : 0.0,
                100.0 * share);
    return 0;
  }
  if (args.has("--ops")) {
    if (json) std::printf("  \"ops\": [\n");
    for (uint32_t i = 0; i < root->ops()->size(); ++i) {
      const fb::Op* op = root->ops()->Get(i);
      std::string ins, outs;
      for (uint32_t k = 0; op->inputs() && k < op->inputs()->size(); ++k) {
        const char* n = name_of(tensors->Get(op->inputs()->Get(k)));
        ins += (k ? (json ? ", " : ", ") : "") + (json ? json_string(n) : std::string(n));
      }
      for (uint32_t k = 0; op->outputs() && k < op->outputs()->size(); ++k) {
        const char* n = name_of(tensors->Get(op->outputs()->Get(k)));
        outs += (k ? ", " : "") + (json ? json_string(n) : std::string(n));
      }
      if (json) {
        std::printf(
            "    {\"index\": %u, \"op\": \"%s\", \"phase\": \"%s\", \"inputs\": [%s], \"outputs\": "
            "[%s]}%s\n",
            i, op_name(op->code()), phase_name(op->phase()), ins.c_str(), outs.c_str(),
            i + 1 == root->ops()->size() ? "" : ",");
      } else {
        std::printf("%5u  %-9s  %-26s %s -> %s\n", i, phase_name(op->phase()), op_name(op->code()),
                    ins.c_str(), outs.c_str());
      }
    }
    if (json) std::printf("  ],\n");  // "path" always follows
  }
  for (int pass = 0; pass < 2; ++pass) {
    const bool params_only = pass == 1;
    if (!args.has(params_only ? "--params" : "--tensors")) continue;
    std::vector<uint32_t> ids;
    if (params_only) {
      for (uint32_t i = 0; root->params() && i < root->params()->size(); ++i)
        ids.push_back(root->params()->Get(i));
    } else {
      for (uint32_t i = 0; i < tensors->size(); ++i) ids.push_back(i);
    }
    if (json) std::printf("  \"%s\": [\n", params_only ? "params" : "tensors");
    for (size_t k = 0; k < ids.size(); ++k) {
      const fb::Tensor* t = tensors->Get(ids[k]);
      if (json) {
        print_tensor_json(t, ids[k], k + 1 == ids.size());
      } else {
        std::printf("%5u  %-10s %-10s %-4s %-18s offset %-10llu %10llu B  %s\n", ids[k],
                    kRoles[static_cast<int>(t->role())], kRegions[static_cast<int>(t->region())],
                    kDtypes[static_cast<int>(t->dtype())], shape_text(t).c_str(),
                    static_cast<unsigned long long>(t->offset()),
                    static_cast<unsigned long long>(t->size()), name_of(t));
      }
    }
    if (json) std::printf("  ],\n");
  }
  if (json) std::printf("  \"path\": %s\n}\n", json_string(path.c_str()).c_str());
  return 0;
}

}  // namespace cli
}  // namespace remat
