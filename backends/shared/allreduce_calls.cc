// The all-reduce ops' attribute and messages, shared by the backends (allreduce_calls.h).
#include "backends/shared/allreduce_calls.h"

#include "backends/shared/op_args.h"
#include "plan/ops.h"
#include "runtime/communicator_fields.h"

namespace remat {

uint32_t allreduce_bucket(const OpCall& call) {
  static_assert(attr::allreduce_start::bucket.index == attr::allreduce_wait::bucket.index,
                "both all-reduce ops name their bucket at the same attribute");
  return static_cast<uint32_t>(iattr(call, attr::allreduce_start::bucket));
}

const remat_communicator* allreduce_communicator(const OpCall& call, const StepContext& ctx,
                                                 bool takes_cuda_memory, ErrorBuffer* err) {
  if (ctx.communicator == nullptr) {
    set_error(err, REMAT_ERROR_FAILED_PRECONDITION, "op %u (%s): no communicator for bucket %u",
              static_cast<unsigned>(call.index), op_name(call.code),
              static_cast<unsigned>(allreduce_bucket(call)));
    return nullptr;
  }
  if (!takes_cuda_memory && communicator_memory(*ctx.communicator) == REMAT_MEMORY_CUDA) {
    set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
              "op %u (%s): the communicator sums CUDA device memory, where this backend's "
              "tensors of bucket %u are not",
              static_cast<unsigned>(call.index), op_name(call.code),
              static_cast<unsigned>(allreduce_bucket(call)));
    return nullptr;
  }
  return ctx.communicator;
}

remat_status allreduce_callback_failed(const OpCall& call, const char* callback,
                                       remat_status returned, ErrorBuffer* err) {
  return set_error(err, REMAT_ERROR_CALLBACK,
                   "op %u (%s): the communicator's %s of bucket %u returned %d (%s)",
                   static_cast<unsigned>(call.index), op_name(call.code), callback,
                   static_cast<unsigned>(allreduce_bucket(call)), static_cast<int>(returned),
                   remat_status_string(returned));
}

}  // namespace remat
