// Parameters and buffers to and from safetensors files (--save-params, --load-params).
#include "cli/params_file.h"

#include <vector>

#include "cli/commands.h"
#include "io/safetensors.h"
#include "io/widen_to_f32.h"
#include "cli/session_calls.h"

namespace remat {
namespace cli {
namespace {

// Parameters, then buffers: the persistent tensors a state_dict holds.
std::vector<remat_tensor_info> state_dict_entries(const remat_plan* plan) {
  std::vector<remat_tensor_info> entries = bindings(plan, REMAT_BINDING_PARAM);
  for (const remat_tensor_info& b : bindings(plan, REMAT_BINDING_BUFFER)) entries.push_back(b);
  return entries;
}

// torch keeps counters as 0-dim tensors: an i64 [1] is written with shape [].
std::vector<int64_t> file_shape(const remat_tensor_info& info) {
  if (info.dtype == REMAT_DTYPE_I64 && info.rank == 1 && info.dims[0] == 1) return {};
  return std::vector<int64_t>(info.dims, info.dims + info.rank);
}

}  // namespace

void save_params(remat_session* session, const remat_plan* plan, const std::string& path) {
  SafeTensorsFile file;
  for (const remat_tensor_info& p : state_dict_entries(plan)) {
    SafeTensor t{p.name, safetensors_dtype(p.dtype), file_shape(p), std::vector<uint8_t>(p.bytes)};
    check(session, remat_session_read_param(session, p.name, t.data.data(), t.data.size()),
          "reading '" + std::string(p.name) + "'");
    file.tensors.push_back(std::move(t));
  }
  std::string error;
  if (!write_safetensors(path, file, &error)) throw Failure(error);
}

void load_params(remat_session* session, const remat_plan* plan, const std::string& path) {
  SafeTensorsFile file;
  std::string error;
  if (!read_safetensors(path, &file, &error)) throw Failure(error);
  const size_t params = bindings(plan, REMAT_BINDING_PARAM).size();
  const std::vector<remat_tensor_info> entries = state_dict_entries(plan);
  for (size_t k = 0; k < entries.size(); ++k) {
    const remat_tensor_info& p = entries[k];
    SafeTensor* t = nullptr;
    for (SafeTensor& candidate : file.tensors)
      if (candidate.name == p.name) t = &candidate;
    // A buffer (a batch norm's running statistics, its counter) the file lacks keeps the value
    // the plan starts it at: a file of parameters alone is a state_dict without its buffers.
    if (t == nullptr && k >= params) continue;
    if (t == nullptr)
      throw Failure(path + ": no tensor '" + p.name + "' (a parameter of the plan)");
    const std::vector<int64_t> want(p.dims, p.dims + p.rank);
    const std::string dtype = safetensors_dtype(p.dtype);
    // Parameters are float32 masters at every precision; BF16 or F16 ones (a model saved in
    // half precision) are widened to them, exactly.
    const bool widens = p.dtype == REMAT_DTYPE_F32 && widens_to_f32(t->dtype);
    if ((t->dtype != dtype && !widens) || (t->shape != want && t->shape != file_shape(p))) {
      throw Failure(path + ": '" + p.name + "' is " + t->dtype + " " + dims_text(t->shape) +
                    ", the plan needs " + dtype +
                    (p.dtype == REMAT_DTYPE_F32 ? " (or BF16, F16) " : " ") + dims_text(want));
    }
    widen_to_f32(t);
    check(session, remat_session_write_param(session, p.name, t->data.data(), t->data.size()),
          "loading '" + std::string(p.name) + "'");
  }
}

}  // namespace cli
}  // namespace remat
