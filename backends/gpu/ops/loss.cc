// Loss ops on the GPU backends: softmax cross-entropy and mean squared error (kernels/loss.cl).
// The scalar losses run as one work-group summing in a fixed tree order: deterministic.
// Cross-entropy's rows go to teams of work items (row_team): within its one group, and over as
// many groups as the rows need for the gradient.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace gpu {

remat_status softmax_cross_entropy(Launcher& l, const OpCall& call, const StepContext&,
                                   ErrorBuffer* err) {
  const TensorRef& logits = *call.inputs[0];
  const TensorRef& labels = *call.inputs[1];
  remat_status status = l.begin_check(call, err);
  if (status != REMAT_OK) return status;
  const int64_t c = last_dim(logits);
  Args a(l, kKernel_cross_entropy);
  a.tensor(logits).tensor(labels).tensor(*call.outputs[0]).tensor(*call.outputs[1]);
  a.u64(rows_of(logits)).u64(c).state().op(call).u32(row_team(l, kKernel_cross_entropy, c));
  a.partials();  // Also the team reductions' float scratch (kernels/loss.cl).
  status = a.launch_one_group(call, err);
  return status == REMAT_OK ? finish_check(l, call, labels, err) : status;
}

remat_status softmax_cross_entropy_grad(Launcher& l, const OpCall& call, const StepContext&,
                                        ErrorBuffer* err) {
  const TensorRef& probs = *call.inputs[0];
  const TensorRef& labels = *call.inputs[1];
  const int64_t rows = rows_of(probs);
  const int64_t c = last_dim(probs);
  const uint32_t team = row_team(l, kKernel_cross_entropy_grad, c);
  remat_status status = l.begin_check(call, err);
  if (status != REMAT_OK) return status;
  Args a(l, kKernel_cross_entropy_grad);
  a.tensor(probs).tensor(labels).tensor(*call.outputs[0]).u64(rows).u64(c);
  a.f32(rows > 0 ? static_cast<float>(1.0 / static_cast<double>(rows)) : 0.0f).state().op(call);
  a.u32(team);
  status = a.launch_rows(rows, team, call, err);
  return status == REMAT_OK ? finish_check(l, call, labels, err) : status;
}

remat_status mse(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& pred = *call.inputs[0];
  Args a(l, kKernel_mse);
  a.tensor(pred).tensor(*call.inputs[1]).tensor(*call.outputs[0]).u64(pred.numel).partials();
  return a.launch_one_group(call, err);
}

}  // namespace gpu
}  // namespace remat
