// `remat`: compile plans, train, inspect. Exit codes: 0 success, 1 failure, 2 usage error.
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "backends/device_profiles.h"
#include "cli/command_flags.h"
#include "cli/commands.h"
#include "cli/interrupts.h"
#include "compiler/graph.h"
#include "remat/remat.h"

namespace {

const char kUsage[] =
    "usage: remat COMMAND [ARGS]   (remat --version: the release, C API and plan formats)\n"
    "\n"
    "commands:\n";

const char kUsageBackends[] =
    "B is cpu | opencl[:P[:D]] | cuda[:N] | null (train runs there; its device profile sets the\n"
    "  plan's alignment and the spill cost model's defaults):\n";

const char kUsageTerms[] =
    "\n"
    "MODEL is a template: mlp:layers=L,width=W,in=I,classes=C[,dropout=P]\n"
    "                  or "
    "transformer:layers=L,hidden=H,heads=A,ffn=F,seq=S,vocab=V,classes=C[,dropout=P]\n"
    "                  or bert-base[:seq=S] | bert-large[:seq=S] (BERT's published sizes; seq "
    "defaults to 512)\n"
    "                  or cnn:channels=C1xC2x...,in=CxHxW,classes=K\n"
    "                  or resnet:depth=6n+2,width=W,in=CxHxW,classes=K (e.g. depth=20: ResNet-20)\n"
    "                  or dscnn:blocks=N,width=W,in=CxHxW,classes=K (docs/templates.md)\n"
    "         or FILE.onnx with --loss cross_entropy|mse (an exported model; compile, train and "
    "size; docs/onnx.md)\n"
    "SPEC is sgd:lr=0.1[,momentum=0.9][,weight_decay=W] | adam:lr=1e-3[,...] | "
    "adamw:lr=1e-3[,...]\n"
    "         (default sgd:lr=0.1, and sgd:lr=0.01 for bert-base and bert-large: plain SGD adds "
    "no\n"
    "          optimizer state, and each template learns its synthetic task with its default)\n"
    "S is none | sqrt | splits | selective | budget (with --arena-budget or --device-budget) | "
    "manual:TENSOR,TENSOR,...\n"
    "  | auto (the default with a budget: keep, recompute or spill for the fastest predicted step "
    "that\n"
    "    fits; docs/strategies.md)\n"
    "Budgets, the same in every command: --arena-budget SIZE: the arena (budget and auto fit it);\n"
    "  --device-budget SIZE: arena + persistent (what fits the device, spilling to host where "
    "needed);\n"
    "  --host-budget SIZE: host spill bytes (0: no spilling). --budget is the deprecated name of\n"
    "  --arena-budget (in size, of --device-budget). docs/sizing.md, \"Budgets\"\n"
    "SIZE accepts B, KiB, MiB, GiB, TiB (and KB, MB, GB, TB). See docs/cli.md.\n";

// The usage text: each command's synopsis from the table the parser uses
// (cli/command_flags.h), one line per backend's device profile, then the terms.
void print_usage(std::FILE* out) {
  std::fputs(kUsage, out);
  for (const remat::cli::CommandFlags& c : remat::cli::command_table())
    std::fputs(remat::cli::synopsis(c, 100).c_str(), out);
  std::fputs(kUsageBackends, out);
  for (const remat::DeviceProfile& p : remat::kDeviceProfiles) {
    std::fprintf(out, "  %-7s alignment %4u B, copies %g B/s (%s), compute %g FLOP/s\n", p.name,
                 p.alignment, p.copy_bandwidth,
                 p.asynchronous_copies ? "overlapped" : "synchronous", p.compute_rate);
  }
  std::fputs(kUsageTerms, out);
}

// `remat --version`: the library's release, C API and plan formats (remat_version()).
int print_version() {
  remat_version_info v{};
  v.struct_size = sizeof(v);
  if (remat_version(&v) != REMAT_OK) {
    std::fprintf(stderr, "remat: the library did not say its version\n");
    return 1;
  }
  std::printf("remat %u.%u.%u (C API %u, plan formats %u to %u)\n", v.major, v.minor, v.patch,
              v.api_version, v.plan_format_min, v.plan_format_max);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace remat::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    print_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (std::string(argv[1]) == "--version") return print_version();
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG, which the file writer
  // reports and cleans up after, instead of the signal killing remat mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  // SIGINT, SIGTERM: remove the temporary file of a write in progress, exit 130, 143.
  install_interrupt_handlers(command);
  try {
    if (command == "compile") return run_compile(rest);
    if (command == "train") return run_train(rest);
    if (command == "inspect") return run_inspect(rest);
    if (command == "devices") return run_devices(rest);
    if (command == "size") return run_size(rest);
    std::fprintf(stderr, "remat: unknown command '%s'\n\n", command.c_str());
    print_usage(stderr);
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "remat %s: %s\n(run 'remat --help' for usage)\n", command.c_str(),
                 e.what());
    return 2;
  } catch (const remat::compiler::CompileError& e) {
    std::fprintf(stderr, "remat %s: %s\n", command.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat %s: %s\n", command.c_str(), e.what());
    return 1;
  }
}
