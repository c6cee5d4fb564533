// A session's parameters and buffers as a safetensors file, under PyTorch's state_dict names.
#ifndef REMAT_CLI_PARAMS_FILE_H_
#define REMAT_CLI_PARAMS_FILE_H_

#include <string>

#include "remat/remat.h"

namespace remat {
namespace cli {

/// Writes every parameter and buffer of |plan| read from |session| to the safetensors file
/// |path|, as torch's state_dict holds them: f32 tensors, and a batch norm's
/// num_batches_tracked as an i64 scalar (shape []). Throws Failure naming what went wrong.
void save_params(remat_session* session, const remat_plan* plan, const std::string& path);

/// Writes every parameter and buffer of |plan| from the safetensors file |path| into
/// |session|. Each must be there with the plan's dtype and shape (an i64 [1] buffer also
/// accepts torch's scalar shape []); throws Failure naming the first that is missing or differs.
void load_params(remat_session* session, const remat_plan* plan, const std::string& path);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_PARAMS_FILE_H_
