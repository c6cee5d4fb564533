// Data-parallel training's all-reduce of a bucket of gradients on the GPU backends
// (docs/data-parallel.md). A communicator of host memory sums host arrays, so allreduce_start
// copies the bucket's tensors into the bucket's host slot (HostStaging, laid out when the
// backend prepared the plan) once the ops before it have written them, and starts the sums
// there; allreduce_wait waits for them, copies them back, and divides each element by the
// number of ranks on the device (unary_op's Divide: the CPU's correctly rounded quotient where
// the device rounds division correctly, kernels/elementwise.cl). The start waits for its copies
// on the host (a step of a data-parallel plan is not captured as a CUDA graph); the copies back
// are queued before the division and whatever follows, and the slot is not written again
// before the next step's start has read it on the same queue. A communicator of CUDA device
// memory (NCCL's) sums the tensors where they are: the start waits for the ops before it and
// hands over the tensors' device addresses; the wait returns once the sums are there, and the
// division follows.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/allreduce_calls.h"
#include "plan/ops.h"
#include "runtime/communicator_fields.h"

namespace remat {
namespace gpu {
namespace {

// Bucket |call|'s host slot, or nullptr after a message naming the op.
uint8_t* slot_of(Launcher& l, const OpCall& call, ErrorBuffer* err) {
  uint8_t* slot = l.host_staging().slot(allreduce_bucket(call));
  if (slot == nullptr) {
    set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
              "op %u (%s): bucket %u has no host slot (the backend did not prepare this plan)",
              static_cast<unsigned>(call.index), op_name(call.code),
              static_cast<unsigned>(allreduce_bucket(call)));
  }
  return slot;
}

// The arrays of |call|'s tensors in CUDA device memory, into |parts| (the launcher's tensors are
// there: allreduce_communicator() refused a device-memory communicator otherwise).
void cuda_parts(const Launcher& l, const OpCall& call, remat_buffer* parts) {
  for (int i = 0; i < call.num_inputs; ++i) {
    parts[i].data = l.cuda_address(*call.inputs[i]);
    parts[i].count = static_cast<uint64_t>(call.inputs[i]->numel);
  }
}

// Divides |t|'s sums by the number of ranks, on the device.
remat_status divide(Launcher& l, const TensorRef& t, float ranks, const OpCall& call,
                    ErrorBuffer* err) {
  Args a(l, kKernel_unary_op);
  a.i32(kGpuDivide).f32(ranks).f32(0.0f).typed(t).typed(t).u64(t.numel);
  return a.launch(static_cast<size_t>(t.numel), call, err);
}

}  // namespace

remat_status allreduce_start(Launcher& l, const OpCall& call, const StepContext& ctx,
                             ErrorBuffer* err) {
  const remat_communicator* c = allreduce_communicator(call, ctx, l.tensors_in_cuda_memory(), err);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  remat_buffer parts[kMaxOpInputs];
  if (communicator_memory(*c) == REMAT_MEMORY_CUDA) {
    cuda_parts(l, call, parts);
  } else {
    uint8_t* slot = slot_of(l, call, err);
    if (slot == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
    for (int i = 0; i < call.num_inputs; ++i) {
      const TensorRef& t = *call.inputs[i];
      const remat_status s = l.read_to_host(t, slot, call, err);
      if (s != REMAT_OK) return s;
      parts[i].data = reinterpret_cast<float*>(slot);
      parts[i].count = static_cast<uint64_t>(t.numel);
      slot += HostStaging::array_bytes(t);
    }
  }
  // The host copies, or the ops that wrote the tensors a device-memory communicator reads.
  remat_status s = l.finish_host_copies(call, err);
  if (s != REMAT_OK) return s;
  s = c->allreduce_start(c->user, allreduce_bucket(call), parts,
                         static_cast<uint32_t>(call.num_inputs));
  return s == REMAT_OK ? REMAT_OK : allreduce_callback_failed(call, "allreduce_start", s, err);
}

remat_status allreduce_wait(Launcher& l, const OpCall& call, const StepContext& ctx,
                            ErrorBuffer* err) {
  const remat_communicator* c = allreduce_communicator(call, ctx, l.tensors_in_cuda_memory(), err);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  const bool in_device = communicator_memory(*c) == REMAT_MEMORY_CUDA;
  uint8_t* slot = in_device ? nullptr : slot_of(l, call, err);
  if (!in_device && slot == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  remat_status s = c->allreduce_wait(c->user, allreduce_bucket(call));
  if (s != REMAT_OK) return allreduce_callback_failed(call, "allreduce_wait", s, err);
  const float ranks = static_cast<float>(c->size);
  for (int i = 0; i < call.num_inputs && s == REMAT_OK; ++i) {
    const TensorRef& t = *call.inputs[i];
    if (!in_device) {
      s = l.write_from_host(t, slot, call, err);
      slot += HostStaging::array_bytes(t);
    }
    if (s == REMAT_OK) s = divide(l, t, ranks, call, err);
  }
  return s;
}

}  // namespace gpu
}  // namespace remat
