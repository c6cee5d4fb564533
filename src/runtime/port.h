// Platform hooks the runtime needs: memory at start-up, a clock and, where the platform has
// them, threads for the CPU kernels. The library never prints or aborts: every failure is a
// status with a message the caller reads. ports/posix implements them with the C library and
// POSIX threads; ports/baremetal with a static pool and no threads.
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

/// Hardware threads this process may run on (its CPU affinity where the platform has one);
/// at least 1. 1 on a platform without threads.
uint32_t port_hardware_threads();

/// A team of threads that run one task together: the caller and |threads| - 1 workers that
/// wait between tasks. One thread at a time drives a team (the session's).
struct PortTeam;

/// A team's task: called once with each index in [0, threads), all at once.
using PortTask = void (*)(void* context, uint32_t index);

/// Starts a team of |threads| (2 or more) threads. nullptr when the platform has no threads or
/// cannot start them. Called only while a session is created, never during a step.
PortTeam* port_team_create(uint32_t threads);

/// Runs task(context, i) for every i in [0, threads) at once, i = 0 on the caller, and returns
/// when every call has returned. Allocates nothing.
void port_team_run(PortTeam* team, PortTask task, void* context);

/// Stops and joins a team's workers and frees it. nullptr is allowed.
void port_team_destroy(PortTeam* team);

}  // namespace remat

#endif  // REMAT_RUNTIME_PORT_H_
