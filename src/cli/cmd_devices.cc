// `remat devices`: the backends this build has and the devices each can reach here.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "runtime/backend_registry.h"

namespace remat {
namespace cli {
namespace {

// Every backend remat has; those this build lacks are named as such.
const char* const kKnownBackends[] = {"cpu", "opencl", "cuda"};

bool compiled_in(const char* name) {
  for (size_t i = 0; i < backend_count(); ++i) {
    if (std::strcmp(backend_name(i), name) == 0) return true;
  }
  return false;
}

}  // namespace

int run_devices(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {});
  if (!args.positional().empty()) throw UsageError("devices takes no arguments");
  // Each lister asks its driver only (cudart for CUDA, never cuBLAS), so this stays fast.
  static char text[8192];
  for (size_t i = 0; i < backend_count(); ++i) {
    text[0] = '\0';
    list_backend_devices(i, text, sizeof(text));
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
