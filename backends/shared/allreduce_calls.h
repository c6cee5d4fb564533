// What every backend's all-reduce ops (allreduce_start, allreduce_wait: data-parallel training,
// docs/data-parallel.md) read from their call and say when the session's communicator fails:
// written once for the CPU and GPU backends, so that their messages are the same words.
#ifndef REMAT_BACKENDS_SHARED_ALLREDUCE_CALLS_H_
#define REMAT_BACKENDS_SHARED_ALLREDUCE_CALLS_H_

#include <stdint.h>

#include "remat/remat.h"
#include "runtime/backend.h"

namespace remat {

/// The bucket an allreduce_start or allreduce_wait call names (its `bucket` attribute).
uint32_t allreduce_bucket(const OpCall& call);

/// The step's communicator, or nullptr after writing REMAT_ERROR_FAILED_PRECONDITION, naming the
/// op and its bucket, into |err| when there is none or when its arrays are in CUDA device memory
/// (REMAT_MEMORY_CUDA) and |takes_cuda_memory| is false (the session refuses both, so this
/// guards a backend used on its own).
const remat_communicator* allreduce_communicator(const OpCall& call, const StepContext& ctx,
                                                 bool takes_cuda_memory, ErrorBuffer* err);

/// REMAT_ERROR_CALLBACK, with a message naming the op, the communicator's |callback| and the
/// bucket, and the status |returned| it gave.
remat_status allreduce_callback_failed(const OpCall& call, const char* callback,
                                       remat_status returned, ErrorBuffer* err);

}  // namespace remat

#endif  // REMAT_BACKENDS_SHARED_ALLREDUCE_CALLS_H_
