// Data-parallel training's all-reduce of a bucket of gradients: the session's communicator sums
// the tensors over the ranks in place (asynchronously, between the two ops), then each element
// is divided by the number of ranks on its own, so the threads' parts give the same bits
// whatever their number.
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "backends/shared/allreduce_calls.h"

namespace remat {
namespace cpu {
namespace {

// Elements per part of the threads' division (64 KiB of floats).
constexpr int64_t kDivideGrain = 1 << 14;

}  // namespace

remat_status allreduce_start(const KernelArgs& args) {
  const remat_communicator* c = allreduce_communicator(*args.call, *args.ctx, false, args.err);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  remat_buffer parts[kMaxOpInputs];
  const uint32_t count = args.call->num_inputs;
  for (uint32_t i = 0; i < count; ++i) {
    parts[i].data = static_cast<float*>(args.in[i]);
    parts[i].count = static_cast<uint64_t>(in_ref(args, i).numel);
  }
  const remat_status s = c->allreduce_start(c->user, allreduce_bucket(*args.call), parts, count);
  return s == REMAT_OK ? REMAT_OK
                       : allreduce_callback_failed(*args.call, "allreduce_start", s, args.err);
}

remat_status allreduce_wait(const KernelArgs& args) {
  const remat_communicator* c = allreduce_communicator(*args.call, *args.ctx, false, args.err);
  if (c == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  const remat_status s = c->allreduce_wait(c->user, allreduce_bucket(*args.call));
  if (s != REMAT_OK) return allreduce_callback_failed(*args.call, "allreduce_wait", s, args.err);
  const float ranks = static_cast<float>(c->size);
  // With a power of two of ranks, 1 / ranks is exact and x * (1 / ranks) is x / ranks rounded
  // the same way (one rounding of the same real number), several times faster.
  const bool exact_inverse = (c->size & (c->size - 1)) == 0;
  const float inverse = 1.0f / ranks;
  for (uint32_t t = 0; t < args.call->num_inputs; ++t) {
    float* x = static_cast<float*>(args.in[t]);
    parallel_for(args, in_ref(args, t).numel, kDivideGrain,
                 [&](int64_t begin, int64_t end, uint32_t) {
                   if (exact_inverse) {
                     for (int64_t i = begin; i < end; ++i) x[i] *= inverse;
                   } else {
                     for (int64_t i = begin; i < end; ++i) x[i] /= ranks;
                   }
                 });
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
