// `remat devices`: the backends this build has and the devices each can reach here, through
// the public C API (what any program linking libremat can ask).
#include <cstdio>
#include <cstring>

#include "cli/command_flags.h"
#include "cli/commands.h"
#include "remat/remat.h"

namespace remat {
namespace cli {
namespace {

// Every backend remat has; those this build lacks are named as such.
const char* const kKnownBackends[] = {"cpu", "opencl", "cuda"};

bool compiled_in(const char* name) {
  const char* built = nullptr;
  for (uint32_t i = 0; remat_backend_name(i, &built) == REMAT_OK; ++i) {
    if (std::strcmp(built, name) == 0) return true;
  }
  return false;
}

}  // namespace

int run_devices(const std::vector<std::string>& argv) {
  const Args args = parse_args("devices", argv);
  if (!args.positional().empty()) throw UsageError("devices takes no arguments");
  // Each lister asks its driver only (cudart for CUDA, never cuBLAS), so this stays fast.
  static char text[8192];
  for (uint32_t i = 0; i < remat_backend_count(); ++i) {
    if (remat_backend_devices(i, nullptr, text, sizeof(text)) != REMAT_OK) continue;
    const size_t length = std::strlen(text);
    std::printf("%s%s", text, length > 0 && text[length - 1] != '\n' ? "\n" : "");
  }
  for (const char* name : kKnownBackends) {
    if (!compiled_in(name)) std::printf("(%s: not in this build)\n", name);
  }
  return 0;
}

}  // namespace cli
}  // namespace remat
