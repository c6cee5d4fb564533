// A session's communicator (data-parallel training, docs/data-parallel.md): the checks of
// remat_session_options.communicator at creation, and the waits after a step that stopped early.
#ifndef REMAT_RUNTIME_SESSION_COMMUNICATOR_H_
#define REMAT_RUNTIME_SESSION_COMMUNICATOR_H_

#include <stdint.h>

#include "runtime/session.h"

namespace remat {

/// Checks |c| against the session's plan and |backend| (remat_session_options.backend) and keeps
/// it in |session|: a data-parallel plan (one with allreduce ops) needs a well-formed
/// communicator whose arrays are where the backend keeps its tensors or their host copies (host
/// memory, or the cuda backend's own device); any other plan refuses one of more than one rank,
/// whose gradients it would not average. REMAT_ERROR_INVALID_ARGUMENT, naming the field, if not.
remat_status check_communicator(remat_session* session, const remat_communicator* c,
                                const char* backend);

/// After a step stopped at op |stopped| of its |n_ops|: waits for every bucket an earlier op
/// started and a later op would have waited for, so that no sum still writes the arena and every
/// rank makes the same calls.
void drain_buckets(remat_session* session, uint32_t stopped, uint32_t n_ops);

}  // namespace remat

#endif  // REMAT_RUNTIME_SESSION_COMMUNICATOR_H_
