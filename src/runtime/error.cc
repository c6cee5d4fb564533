// Statuses: their constant descriptions (C ABI) and messages into a fixed buffer (no allocation,
// always terminated; numeric ones, plan/numeric_message.h, in a build without messages).
#include <stdarg.h>
#include <stdio.h>

#include "remat/remat.h"
#include "runtime/backend.h"

namespace remat {

#if REMAT_MESSAGES
remat_status set_error(ErrorBuffer* err, remat_status status, const char* format, ...) {
  if (err != nullptr && err->text != nullptr && err->capacity > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(err->text, err->capacity, format, args);
    va_end(args);
  }
  return status;
}
#endif

}  // namespace remat

extern "C" {

const char* remat_status_string(remat_status status) {
  switch (status) {
    case REMAT_OK: return "ok";
    case REMAT_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case REMAT_ERROR_PLAN_CORRUPT: return "plan corrupt";
    case REMAT_ERROR_PLAN_VERSION: return "plan version mismatch";
    case REMAT_ERROR_UNKNOWN_OP: return "unknown op";
    case REMAT_ERROR_BAD_ARITY: return "bad op arity";
    case REMAT_ERROR_BAD_SHAPE: return "bad shape";
    case REMAT_ERROR_BAD_DTYPE: return "bad dtype";
    case REMAT_ERROR_OUT_OF_REGION: return "tensor outside its region";
    case REMAT_ERROR_OVERLAP: return "live tensors overlap";
    case REMAT_ERROR_ARENA_TOO_SMALL: return "memory region too small";
    case REMAT_ERROR_NOT_FOUND: return "name not found";
    case REMAT_ERROR_OUT_OF_RANGE: return "value out of range";
    case REMAT_ERROR_UNAVAILABLE: return "backend unavailable";
    case REMAT_ERROR_RESOURCE_EXHAUSTED: return "out of memory";
    case REMAT_ERROR_FAILED_PRECONDITION: return "failed precondition";
    case REMAT_ERROR_UNIMPLEMENTED: return "unimplemented";
    case REMAT_ERROR_INTERNAL: return "internal error";
    case REMAT_ERROR_MISALIGNED: return "memory misaligned";
    case REMAT_ERROR_STATE_MISMATCH: return "state of another plan or format";
    case REMAT_ERROR_DATA_LOSS: return "state corrupt";
    case REMAT_ERROR_CALLBACK: return "callback failed";
    case REMAT_ERROR_NONFINITE: return "non-finite value";
  }
  return "unknown status";
}

}  // extern "C"
