// `remat devices`: the backends this build has and the devices each can reach here.
#include <cstdio>

#include "cli/commands.h"

#if defined(REMAT_HAVE_OPENCL)
// From backends/opencl/opencl_device.h (not included: it pulls in CL/cl.h).
extern "C" int remat_opencl_list_devices(char* out, size_t capacity);
#endif

namespace remat {
namespace cli {

int run_devices(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {});
  if (!args.positional().empty()) throw UsageError("devices takes no arguments");
  std::printf("cpu:0  host CPU (the caller's memory)\n");
#if defined(REMAT_HAVE_OPENCL)
  static char text[8192];
  const int count = remat_opencl_list_devices(text, sizeof(text));
  std::printf("%s%s", text, count > 0 && text[0] != '\0' && text[std::char_traits<char>::length(text) - 1] != '\n' ? "\n" : "");
  if (count <= 0) std::printf("(opencl: no device)\n");
#else
  std::printf("(opencl: not in this build)\n");
#endif
  return 0;
}

}  // namespace cli
}  // namespace remat
