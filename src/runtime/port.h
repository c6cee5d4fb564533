// Platform hooks the runtime needs: memory at start-up and a clock. The library never prints
// or aborts: every failure is a status with a message the caller reads.
// ports/posix implements them with the C library; ports/baremetal with a static pool.
#ifndef REMAT_RUNTIME_PORT_H_
#define REMAT_RUNTIME_PORT_H_

#include <stddef.h>
#include <stdint.h>

namespace remat {

/// Allocates |bytes| bytes aligned to |alignment| (a power of two), or returns nullptr.
/// Called only while a plan is opened or a session is created, never during a step.
void* port_alloc(size_t bytes, size_t alignment);

/// Releases memory from port_alloc(). nullptr is allowed.
void port_free(void* pointer);

/// Monotonic time in nanoseconds (0 when the platform has no clock).
uint64_t port_now_ns();

}  // namespace remat

#endif  // REMAT_RUNTIME_PORT_H_
