// The checks of a session's communicator and the waits after a step that stopped early
// (runtime/session_communicator.h).
#include "runtime/session_communicator.h"

#include <stdlib.h>
#include <string.h>

#include "plan/op_subset.h"
#include "plan/ops.h"
#include "runtime/communicator_fields.h"
#include "runtime/struct_size.h"

namespace remat {

// Records a failure in the session's message buffer.
#define FAIL(session, status, ...) set_error(&(session)->err, (status), __VA_ARGS__)

namespace {

// A communicator's arrays must be where the session's |backend| keeps its tensors or their host
// copies: host memory anywhere, CUDA device memory only on that device's cuda backend.
remat_status check_communicator_memory(remat_session* s, const remat_communicator& c,
                                       const char* backend) {
  const int32_t memory = communicator_memory(c);
  if (memory == REMAT_MEMORY_HOST) return REMAT_OK;
  if (memory != REMAT_MEMORY_CUDA) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "options.communicator.memory is %d: REMAT_MEMORY_HOST (0) or REMAT_MEMORY_CUDA (1)",
                static_cast<int>(memory));
  }
  // "cuda" is device 0, "cuda:N" device N; any other name (or a malformed number, which the
  // backend refuses by itself) is not device c.device's.
  long device = -1;
  if (strcmp(backend, "cuda") == 0) {
    device = 0;
  } else if (strncmp(backend, "cuda:", 5) == 0 && backend[5] >= '0' && backend[5] <= '9') {
    char* end = nullptr;
    device = strtol(backend + 5, &end, 10);
    if (*end != '\0') device = -1;
  }
  const int32_t wanted = communicator_device(c);
  if (device == wanted) return REMAT_OK;
  return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
              "options.communicator.memory is REMAT_MEMORY_CUDA (device %d), but the session's "
              "backend is '%s': its tensors are not in that device's memory (its backend is "
              "'cuda:%d'; other backends take a communicator of host memory)",
              static_cast<int>(wanted), backend, static_cast<int>(wanted));
}

}  // namespace

remat_status check_communicator(remat_session* s, const remat_communicator* c,
                                const char* backend) {
  const auto* ops = s->plan->root->ops();
  bool data_parallel = false;
  // A build without the all-reduce ops (plan/op_subset.h) refused any plan holding them.
  for (uint32_t i = 0; op_in_build(OpCode::kAllreduceStart) && i < ops->size() && !data_parallel;
       ++i)
    data_parallel = ops->Get(i)->code() == static_cast<uint16_t>(OpCode::kAllreduceStart);
  if (c == nullptr) {
    if (!data_parallel) return REMAT_OK;
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "options.communicator is NULL: the plan is data-parallel (it has allreduce ops), "
                "and its session sums gradients with the other ranks through one");
  }
  const remat_status size_status =
      check_struct_size("options.communicator", c->struct_size, kCommunicatorFirstSize,
                        sizeof(remat_communicator), &s->err);
  if (size_status != REMAT_OK) return size_status;
  if (c->size < 1 || c->rank < 0 || c->rank >= c->size) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "options.communicator: rank %d of size %d: a size is at least 1 and a rank in "
                "[0, size)",
                static_cast<int>(c->rank), static_cast<int>(c->size));
  }
  if (c->allreduce_start == nullptr || c->allreduce_wait == nullptr) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "options.communicator.%s is NULL",
                c->allreduce_start == nullptr ? "allreduce_start" : "allreduce_wait");
  }
  if (!data_parallel && c->size > 1) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "options.communicator has %d ranks, but the plan is not data-parallel (no "
                "allreduce op): each rank would train on its own rows alone (compile with "
                "--data-parallel)",
                static_cast<int>(c->size));
  }
  // Only the all-reduce ops hand the communicator arrays (a build without them has none).
  if (op_in_build(OpCode::kAllreduceStart)) {
    const remat_status memory_status = check_communicator_memory(s, *c, backend);
    if (memory_status != REMAT_OK) return memory_status;
  }
  s->communicator = c;
  return REMAT_OK;
}

// Buckets are numbered in the order they start (the verifier checks), so those started are the
// first |started|; one pass over the rest of the step finds their waits. The first error's
// message is kept.
void drain_buckets(remat_session* s, uint32_t stopped, uint32_t n_ops) {
  if (!op_in_build(OpCode::kAllreduceStart) || s->communicator == nullptr) return;
  const uint16_t start = static_cast<uint16_t>(OpCode::kAllreduceStart);
  const uint16_t wait = static_cast<uint16_t>(OpCode::kAllreduceWait);
  int64_t started = 0;
  for (uint32_t j = 0; j < stopped; ++j) started += s->ops[j].code == start ? 1 : 0;
  for (uint32_t k = stopped + 1; k < n_ops; ++k) {
    if (s->ops[k].code == wait && s->ops[k].iattrs[0] < started) {
      s->communicator->allreduce_wait(s->communicator->user,
                                      static_cast<uint32_t>(s->ops[k].iattrs[0]));
    }
  }
}

}  // namespace remat
