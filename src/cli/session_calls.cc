// C API calls for the command line.
#include "cli/session_calls.h"

#include "cli/cli_args.h"

namespace remat {
namespace cli {

void check(remat_session* s, remat_status status, const std::string& what) {
  if (status != REMAT_OK) {
    throw Failure(what + ": " + remat_status_string(status) + ": " + remat_session_last_error(s));
  }
}

std::vector<remat_tensor_info> bindings(const remat_plan* plan, remat_binding_kind kind) {
  uint32_t count = 0;
  remat_plan_binding_count(plan, kind, &count);
  std::vector<remat_tensor_info> out(count);
  for (uint32_t i = 0; i < count; ++i) remat_plan_binding(plan, kind, i, &out[i]);
  return out;
}

const char* safetensors_dtype(remat_dtype dtype) {
  switch (dtype) {
    case REMAT_DTYPE_F16: return "F16";
    case REMAT_DTYPE_BF16: return "BF16";
    case REMAT_DTYPE_I32: return "I32";
    case REMAT_DTYPE_I64: return "I64";
    case REMAT_DTYPE_F32: break;
  }
  return "F32";
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace cli
}  // namespace remat
