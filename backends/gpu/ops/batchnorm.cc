// Batch normalisation on the GPU backends (kernels/batchnorm.cl): training (statistics, then
// the normalised output), its gradient (per-channel sums, then dx), evaluation, the running
// statistics' update and the batch counter's increment. The per-channel sums give each channel
// a team of work items (row_team over the channel's images * inner elements). The [N, C, ...]
// tensors are typed arguments, read and written 16-bit as they are (ops/widening.cc:
// read_as_they_are); the per-channel ones float32 (widened where they are 16-bit).
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace gpu {
namespace {

size_t items(int64_t v) { return static_cast<size_t>(v); }

// [N, C, inner] view of a batch-norm tensor (rank 2: inner 1).
struct Channels {
  int64_t n, c, inner;
};

Channels channels_of(const TensorRef& t) {
  const int64_t n = t.dims[0], c = t.dims[1];
  return {n, c, n * c > 0 ? t.numel / (n * c) : 0};
}

}  // namespace

// Two kernels: mean and var a team per channel, y one work item per element.
remat_status batch_norm(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& mean = *call.outputs[1];
  const TensorRef& var = *call.outputs[2];
  const Channels v = channels_of(x);
  const uint32_t team = row_team(l, kKernel_batch_norm_stats, v.n * v.inner);
  Args stats(l, kKernel_batch_norm_stats);
  stats.typed(x).tensor(mean).tensor(var).u64(v.n).u64(v.c).u64(v.inner).u32(team).scratch();
  const remat_status status = stats.launch_rows(v.c, team, call, err);
  if (status != REMAT_OK) return status;
  Args apply(l, kKernel_batch_norm_apply);
  apply.typed(x).tensor(*call.inputs[1]).tensor(*call.inputs[2]).tensor(mean).tensor(var);
  apply.typed(*call.outputs[0]).u64(x.numel).u64(v.c).u64(v.inner);
  apply.f32(fattr(call, attr::batch_norm::eps));
  return apply.launch(items(x.numel), call, err);
}

// Two kernels: dgamma and dbeta a team per channel, dx one work item per element from them.
remat_status batch_norm_grad(Launcher& l, const OpCall& call, const StepContext&,
                             ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[1];
  const TensorRef& dgamma = *call.outputs[1];
  const TensorRef& dbeta = *call.outputs[2];
  const Channels v = channels_of(x);
  const float eps = fattr(call, attr::batch_norm_grad::eps);
  const uint32_t team = row_team(l, kKernel_batch_norm_grad_params, v.n * v.inner);
  Args params(l, kKernel_batch_norm_grad_params);
  params.typed(*call.inputs[0]).typed(x).tensor(*call.inputs[2]).tensor(*call.inputs[3]);
  params.tensor(dgamma).tensor(dbeta).u64(v.n).u64(v.c).u64(v.inner).f32(eps);
  params.u32(team).scratch();
  const remat_status status = params.launch_rows(v.c, team, call, err);
  if (status != REMAT_OK) return status;
  Args dx(l, kKernel_batch_norm_grad_dx);
  dx.typed(*call.inputs[0]).typed(x);
  for (int i = 2; i < 5; ++i) dx.tensor(*call.inputs[i]);
  dx.tensor(dgamma)
      .tensor(dbeta)
      .typed(*call.outputs[0])
      .u64(x.numel)
      .u64(v.c)
      .u64(v.inner)
      .f32(eps);
  return dx.launch(items(x.numel), call, err);
}

remat_status batch_norm_inference(Launcher& l, const OpCall& call, const StepContext&,
                                  ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const Channels v = channels_of(x);
  Args a(l, kKernel_batch_norm_inference);
  a.typed(x);
  for (int i = 1; i < 5; ++i) a.tensor(*call.inputs[i]);
  a.typed(*call.outputs[0]).u64(x.numel).u64(v.c).u64(v.inner);
  a.f32(fattr(call, attr::batch_norm_inference::eps));
  return a.launch(items(x.numel), call, err);
}

remat_status running_stat_update(Launcher& l, const OpCall& call, const StepContext&,
                                 ErrorBuffer* err) {
  const TensorRef& running = *call.outputs[0];
  Args a(l, kKernel_running_stat_update);
  a.tensor(*call.inputs[0]).tensor(*call.inputs[1]).tensor(running).u64(running.numel);
  a.f32(fattr(call, attr::running_stat_update::momentum));
  a.f32(fattr(call, attr::running_stat_update::correction)).state();
  return a.launch(items(running.numel), call, err);
}

remat_status increment(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  Args a(l, kKernel_increment);
  a.tensor(*call.inputs[0]).tensor(*call.outputs[0]).state();
  return a.launch(1, call, err);
}

}  // namespace gpu
}  // namespace remat
