// Error messages into the session's fixed buffer: no allocation, always terminated.
#include <stdarg.h>
#include <stdio.h>

#include "runtime/backend.h"

namespace remat {

remat_status set_error(ErrorBuffer* err, remat_status status, const char* format, ...) {
  if (err != nullptr && err->text != nullptr && err->capacity > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(err->text, err->capacity, format, args);
    va_end(args);
  }
  return status;
}

}  // namespace remat
