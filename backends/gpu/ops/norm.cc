// Row-wise ops over the last axis on the GPU backends: softmax, log-softmax, layer norm and their
// gradients
// (kernels/norm.cl), one work item per row.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace gpu {
namespace {

size_t items(int64_t v) { return static_cast<size_t>(v); }

// softmax and log_softmax, and their gradients: (x) or (dy, y), one work item per row.
remat_status softmax_rows(Launcher& l, const OpCall& call, KernelId kernel, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const int64_t rows = rows_of(x);
  const bool grad = kernel == kKernel_softmax_grad || kernel == kKernel_log_softmax_grad;
  Args a(l, kernel);
  a.tensor(x);
  if (grad) a.tensor(*call.inputs[1]);
  a.tensor(*call.outputs[0]).u64(rows).u64(last_dim(x));
  return a.launch(items(rows), call, err);
}

}  // namespace

remat_status softmax(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return softmax_rows(l, call, kKernel_softmax, err);
}

remat_status softmax_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return softmax_rows(l, call, kKernel_softmax_grad, err);
}

remat_status log_softmax(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return softmax_rows(l, call, kKernel_log_softmax, err);
}

remat_status log_softmax_grad(Launcher& l, const OpCall& call, const StepContext&,
                              ErrorBuffer* err) {
  return softmax_rows(l, call, kKernel_log_softmax_grad, err);
}

remat_status layernorm(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const int64_t rows = rows_of(x);
  Args a(l, kKernel_layernorm);
  for (int i = 0; i < 3; ++i) a.tensor(*call.inputs[i]);
  for (int i = 0; i < 3; ++i) a.tensor(*call.outputs[i]);
  a.u64(rows).u64(last_dim(x)).f32(fattr(call, attr::layernorm::eps));
  return a.launch(items(rows), call, err);
}

// Two kernels: dx one work item per row, dgamma and dbeta one per column.
remat_status layernorm_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[1];
  const int64_t n = last_dim(x);
  const int64_t rows = rows_of(x);
  Args dx(l, kKernel_layernorm_grad_dx);
  for (int i = 0; i < 5; ++i) dx.tensor(*call.inputs[i]);
  dx.tensor(*call.outputs[0]).u64(rows).u64(n);
  const remat_status status = dx.launch(items(rows), call, err);
  if (status != REMAT_OK) return status;
  Args params(l, kKernel_layernorm_grad_params);
  for (int i = 0; i < 4; ++i) params.tensor(*call.inputs[i]);
  params.tensor(*call.outputs[1]).tensor(*call.outputs[2]).u64(rows).u64(n);
  return params.launch(items(n), call, err);
}

}  // namespace gpu
}  // namespace remat
