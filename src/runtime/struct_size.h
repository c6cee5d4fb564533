// The struct_size rules of include/remat/remat.h, once: which sizes a caller's struct may have.
#ifndef REMAT_RUNTIME_STRUCT_SIZE_H_
#define REMAT_RUNTIME_STRUCT_SIZE_H_

#include <stddef.h>

#include "runtime/backend.h"

namespace remat {

/// Accepts |given| bytes for the struct called |what| when it holds at least its first
/// version's |first_size| bytes and no more than the |known_size| this library was built with
/// (an older caller's smaller struct is fine; the caller reads or writes only that prefix).
/// Otherwise REMAT_ERROR_INVALID_ARGUMENT with both sizes in |err| (which may be null).
inline remat_status check_struct_size(const char* what, size_t given, size_t first_size,
                                      size_t known_size, ErrorBuffer* err) {
  if (given > known_size) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "%s.struct_size is %zu, larger than the %zu bytes this library knows "
                     "(a header newer than the library?)",
                     what, given, known_size);
  }
  if (given < first_size) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "%s.struct_size is %zu, smaller than the %zu bytes of its first version; this "
                     "library knows %zu (set it with sizeof or the _init function)",
                     what, given, first_size, known_size);
  }
  return REMAT_OK;
}

}  // namespace remat

#endif  // REMAT_RUNTIME_STRUCT_SIZE_H_
