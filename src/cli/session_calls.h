// How the command line calls the C API: failures become cli::Failure with the library's words,
// and what its messages name (bindings, shapes).
#ifndef REMAT_CLI_SESSION_CALLS_H_
#define REMAT_CLI_SESSION_CALLS_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "remat/remat.h"

namespace remat {
namespace cli {

/// Throws Failure "WHAT: STATUS: MESSAGE" (the session's last error) unless |status| is REMAT_OK.
void check(remat_session* session, remat_status status, const std::string& what);

/// The bindings of |kind| of |plan|, in plan order.
std::vector<remat_tensor_info> bindings(const remat_plan* plan, remat_binding_kind kind);

/// The safetensors name of |dtype| ("F32", "F16", "BF16", "I32", "I64").
const char* safetensors_dtype(remat_dtype dtype);

/// |dims| as "[2, 3]", for messages.
std::string dims_text(const std::vector<int64_t>& dims);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_SESSION_CALLS_H_
