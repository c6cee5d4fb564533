// remat_communicator's fields as the struct_size rules of include/remat/remat.h read them: the
// fields appended after its first version take their defaults in an older caller's struct.
#ifndef REMAT_RUNTIME_COMMUNICATOR_FIELDS_H_
#define REMAT_RUNTIME_COMMUNICATOR_FIELDS_H_

#include <stddef.h>
#include <stdint.h>

#include "remat/remat.h"

namespace remat {

/// The bytes of remat_communicator's first version (up to allreduce_wait).
constexpr size_t kCommunicatorFirstSize = offsetof(remat_communicator, memory);

/// |c|'s remat_memory: REMAT_MEMORY_HOST in a struct without the field.
inline int32_t communicator_memory(const remat_communicator& c) {
  return c.struct_size >= offsetof(remat_communicator, memory) + sizeof(int32_t)
             ? c.memory
             : REMAT_MEMORY_HOST;
}

/// |c|'s CUDA device: 0 in a struct without the field.
inline int32_t communicator_device(const remat_communicator& c) {
  return c.struct_size >= offsetof(remat_communicator, device) + sizeof(int32_t) ? c.device : 0;
}

}  // namespace remat

#endif  // REMAT_RUNTIME_COMMUNICATOR_FIELDS_H_
