// Row-wise ops over the last axis on the GPU backends: softmax, log-softmax, layer norm and their
// gradients (kernels/norm.cl): a team of work items per row (row_team), dgamma and dbeta by
// column tiles.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "plan/gpu_scratch.h"

namespace remat {
namespace gpu {
namespace {

// softmax and log_softmax, and their gradients: (x) or (dy, y), a team per row.
remat_status softmax_rows(Launcher& l, const OpCall& call, KernelId kernel, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const int64_t rows = rows_of(x);
  const uint32_t team = row_team(l, kernel, last_dim(x));
  const bool grad = kernel == kKernel_softmax_grad || kernel == kKernel_log_softmax_grad;
  Args a(l, kernel);
  a.tensor(x);
  if (grad) a.tensor(*call.inputs[1]);
  a.tensor(*call.outputs[0]).u64(rows).u64(last_dim(x)).u32(team).scratch();
  return a.launch_rows(rows, team, call, err);
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
  const uint32_t team = row_team(l, kKernel_layernorm, last_dim(x));
  Args a(l, kKernel_layernorm);
  for (int i = 0; i < 3; ++i) a.typed(*call.inputs[i]);
  for (int i = 0; i < 3; ++i) a.typed(*call.outputs[i]);
  a.u64(rows).u64(last_dim(x)).f32(fattr(call, attr::layernorm::eps)).u32(team).scratch();
  return a.launch_rows(rows, team, call, err);
}

// Two kernels: dx a team per row, dgamma and dbeta by column tiles.
int64_t layernorm_grad_blocks(const OpCall& call) {
  const int64_t rows = rows_of(*call.inputs[1]);
  return gpu_column_blocks(rows);
}

remat_status layernorm_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[1];
  const int64_t n = last_dim(x);
  const int64_t rows = rows_of(x);
  const uint32_t team = row_team(l, kKernel_layernorm_grad_dx, n);
  Args dx(l, kKernel_layernorm_grad_dx);
  for (int i = 0; i < 5; ++i) dx.typed(*call.inputs[i]);
  dx.typed(*call.outputs[0]).u64(rows).u64(n).u32(team).scratch();
  const remat_status status = dx.launch_rows(rows, team, call, err);
  if (status != REMAT_OK) return status;
  // dgamma, dbeta: blocked column sums through the op's scratch (layernorm_grad_blocks).
  uint64_t base = 0;
  remat_status s = scratch_base(l, call, &base, err);
  if (s != REMAT_OK) return s;
  const int64_t blocks = layernorm_grad_blocks(call);
  const TensorRef partial = workspace_tensor(base, 2 * blocks * n);
  Args params(l, kKernel_layernorm_grad_params);
  for (int i = 0; i < 4; ++i) params.typed(*call.inputs[i]);
  params.tensor(partial).u64(rows).u64(n).u64(blocks).u64(gpu_column_block_rows(rows)).scratch();
  s = params.launch_column_tiles(n, blocks, call, err);
  if (s != REMAT_OK) return s;
  Args sum(l, kKernel_column_blocks_sum);
  sum.tensor(partial).typed(*call.outputs[1]).typed(*call.outputs[2]).u64(n).u64(blocks).u32(2);
  return sum.launch(static_cast<size_t>(n), call, err);
}

}  // namespace gpu
}  // namespace remat
