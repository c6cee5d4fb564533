// Data-parallel training's all-reduce of a bucket of gradients: the session's communicator sums
// the tensors over the ranks in place (asynchronously, between the two ops), then each element
// is divided by the number of ranks on its own, so the threads' parts give the same bits
// whatever their number.
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {
namespace {

// Elements per part of the threads' division (64 KiB of floats).
constexpr int64_t kDivideGrain = 1 << 14;

uint32_t bucket_of(const KernelArgs& args) {
  return static_cast<uint32_t>(args.call->iattrs[attr::allreduce_start::bucket.index]);
}

// The communicator, or a failure naming the op (the session refuses a data-parallel plan
// without one, so this guards a backend used on its own).
const remat_communicator* communicator_of(const KernelArgs& args) {
  const remat_communicator* c = args.ctx->communicator;
  if (c == nullptr) {
    set_error(args.err, REMAT_ERROR_FAILED_PRECONDITION,
              "op %u (%s): no communicator for bucket %u", static_cast<unsigned>(args.call->index),
              op_name(args.call->code), static_cast<unsigned>(bucket_of(args)));
  }
  return c;
}

remat_status communicator_failed(const KernelArgs& args, const char* callback,
                                 remat_status returned) {
  return set_error(args.err, REMAT_ERROR_CALLBACK,
                   "op %u (%s): the communicator's %s of bucket %u returned %d (%s)",
                   static_cast<unsigned>(args.call->index), op_name(args.call->code), callback,
                   static_cast<unsigned>(bucket_of(args)), static_cast<int>(returned),
                   remat_status_string(returned));
}

}  // namespace

remat_status allreduce_start(const KernelArgs& args) {
  const remat_communicator* c = communicator_of(args);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  remat_buffer parts[kMaxOpInputs];
  const uint32_t count = args.call->num_inputs;
  for (uint32_t i = 0; i < count; ++i) {
    parts[i].data = static_cast<float*>(args.in[i]);
    parts[i].count = static_cast<uint64_t>(in_ref(args, i).numel);
  }
  const remat_status s = c->allreduce_start(c->user, bucket_of(args), parts, count);
  return s == REMAT_OK ? REMAT_OK : communicator_failed(args, "allreduce_start", s);
}

remat_status allreduce_wait(const KernelArgs& args) {
  const remat_communicator* c = communicator_of(args);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  const remat_status s = c->allreduce_wait(c->user, bucket_of(args));
  if (s != REMAT_OK) return communicator_failed(args, "allreduce_wait", s);
  const float ranks = static_cast<float>(c->size);
  for (uint32_t t = 0; t < args.call->num_inputs; ++t) {
    float* x = static_cast<float*>(args.in[t]);
    parallel_for(args, in_ref(args, t).numel, kDivideGrain,
                 [&](int64_t begin, int64_t end, uint32_t) {
                   for (int64_t i = begin; i < end; ++i) x[i] /= ranks;
                 });
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
