// Elementwise ops on the GPU backends: activations and their gradients, add, mul, scale, powers,
// bias, column sums, sums over axes and their broadcast, dropout, fill (kernels/elementwise.cl).
// One work item per element; the sums by column tiles or a team per row.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "plan/gpu_scratch.h"

namespace remat {
namespace gpu {
namespace {

size_t items(int64_t v) { return static_cast<size_t>(v); }

// One kernel per arity, the op chosen by a uniform argument: fewer kernels to build.
// |beta| is a second attribute where the op has one (clip's high, hard_sigmoid's beta).
remat_status unary(Launcher& l, const OpCall& call, GpuUnary op, float alpha, ErrorBuffer* err,
                   float beta = 0.0f) {
  const TensorRef& y = *call.outputs[0];
  Args a(l, kKernel_unary_op);
  a.i32(op).f32(alpha).f32(beta).typed(*call.inputs[0]).typed(y).u64(y.numel);
  return a.launch(items(y.numel), call, err);
}

remat_status binary(Launcher& l, const OpCall& call, GpuBinary op, float alpha, ErrorBuffer* err,
                    float beta = 0.0f) {
  const TensorRef& c = *call.outputs[0];
  Args a(l, kKernel_binary_op);
  a.i32(op).f32(alpha).f32(beta).typed(*call.inputs[0]).typed(*call.inputs[1]).typed(c);
  a.u64(c.numel);
  return a.launch(items(c.numel), call, err);
}

// Dropout and its gradient apply the same mask; seed and step come from the device state, a
// data-parallel rank's first element of the whole batch's from the step context.
remat_status dropout_mask(Launcher& l, const OpCall& call, const StepContext& ctx,
                          ErrorBuffer* err) {
  const TensorRef& y = *call.outputs[0];
  Args a(l, kKernel_dropout);
  a.typed(*call.inputs[0]).typed(y).u64(y.numel);
  a.u64(ctx.rank * static_cast<uint64_t>(y.numel)).u64(iattr(call, attr::dropout::key));
  a.f32(fattr(call, attr::dropout::p));
  a.state();
  return a.launch(items((y.numel + 3) / 4), call, err);
}

}  // namespace

remat_status pow_scalar(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuPow, fattr(call, attr::pow_scalar::exponent), err);
}
remat_status pow_scalar_grad(Launcher& l, const OpCall& call, const StepContext&,
                             ErrorBuffer* err) {
  return binary(l, call, kGpuPowGrad, fattr(call, attr::pow_scalar_grad::exponent), err);
}
remat_status square_root(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuSqrt, 0.0f, err);
}
remat_status square_root_grad(Launcher& l, const OpCall& call, const StepContext&,
                              ErrorBuffer* err) {
  return binary(l, call, kGpuSqrtGrad, 0.0f, err);
}
remat_status clip(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuClip, fattr(call, attr::clip::low), err, fattr(call, attr::clip::high));
}
remat_status clip_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuClipGrad, fattr(call, attr::clip_grad::low), err,
                fattr(call, attr::clip_grad::high));
}
remat_status hard_sigmoid(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuHardSigmoid, fattr(call, attr::hard_sigmoid::alpha), err,
               fattr(call, attr::hard_sigmoid::beta));
}
remat_status hard_sigmoid_grad(Launcher& l, const OpCall& call, const StepContext&,
                               ErrorBuffer* err) {
  return binary(l, call, kGpuHardSigmoidGrad, fattr(call, attr::hard_sigmoid_grad::alpha), err,
                fattr(call, attr::hard_sigmoid_grad::beta));
}
remat_status leaky_relu(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuLeakyRelu, fattr(call, attr::leaky_relu::alpha), err);
}
remat_status leaky_relu_grad(Launcher& l, const OpCall& call, const StepContext&,
                             ErrorBuffer* err) {
  return binary(l, call, kGpuLeakyReluGrad, fattr(call, attr::leaky_relu_grad::alpha), err);
}
remat_status error_function(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuErf, 0.0f, err);
}
remat_status error_function_grad(Launcher& l, const OpCall& call, const StepContext&,
                                 ErrorBuffer* err) {
  return binary(l, call, kGpuErfGrad, 0.0f, err);
}

// x viewed as [outer, n, inner]: with inner 1 a row sum, a team per output (reduce_sum_rows);
// otherwise column tiles over the outer * inner outputs (reduce_sum).
remat_status reduce_sum(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const ReducedView v = reduced_view(call, *call.inputs[0]);
  const int mean = static_cast<int>(iattr(call, attr::reduce_sum::mean));
  if (v.inner == 1) {
    const uint32_t team = row_team(l, kKernel_reduce_sum_rows, v.n);
    Args a(l, kKernel_reduce_sum_rows);
    a.tensor(*call.inputs[0]).tensor(*call.outputs[0]).u64(v.outer).u64(v.n).i32(mean);
    a.u32(team).scratch();
    return a.launch_rows(v.outer, team, call, err);
  }
  Args a(l, kKernel_reduce_sum);
  a.tensor(*call.inputs[0]).tensor(*call.outputs[0]).u64(v.outer).u64(v.n).u64(v.inner);
  a.i32(mean).scratch();
  return a.launch_column_tiles(v.outer * v.inner, call, err);
}

// y viewed as [outer, n, inner] around the op's axes, one work item per element.
remat_status broadcast(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& y = *call.outputs[0];
  const ReducedView v = reduced_view(call, y);
  Args a(l, kKernel_broadcast);
  a.tensor(*call.inputs[0]).tensor(y).u64(v.outer).u64(v.n).u64(v.inner);
  a.i32(static_cast<int>(iattr(call, attr::broadcast::mean)));
  return a.launch(items(y.numel), call, err);
}

remat_status fill(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& y = *call.outputs[0];
  Args a(l, kKernel_fill);
  a.tensor(y).u64(y.numel).f32(fattr(call, attr::fill::value));
  return a.launch(items(y.numel), call, err);
}

remat_status add(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuAdd, 0.0f, err);
}
remat_status mul(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuMul, 0.0f, err);
}
remat_status relu_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuReluGrad, 0.0f, err);
}
remat_status gelu_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuGeluGrad, 0.0f, err);
}
remat_status tanh_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuTanhGrad, 0.0f, err);
}
remat_status sigmoid_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return binary(l, call, kGpuSigmoidGrad, 0.0f, err);
}
remat_status mse_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  // 2 / n in double, rounded once, as the CPU kernel.
  const int64_t n = call.inputs[0]->numel;
  return binary(l, call, kGpuMseGrad,
                n > 0 ? static_cast<float>(2.0 / static_cast<double>(n)) : 0.0f, err);
}

remat_status relu(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuRelu, 0.0f, err);
}
remat_status gelu(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuGelu, 0.0f, err);
}
remat_status tanh(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuTanh, 0.0f, err);
}
remat_status sigmoid(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuSigmoid, 0.0f, err);
}
remat_status scale(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return unary(l, call, kGpuScale, fattr(call, attr::scale::alpha), err);
}

remat_status add_bias(Launcher& l, const OpCall& call, const TensorRef& x, const TensorRef& b,
                      const TensorRef& y, ErrorBuffer* err) {
  if (b.numel == 0) return REMAT_OK;
  Args a(l, kKernel_bias_add);
  a.typed(x).typed(b).typed(y).u64(y.numel).u64(b.numel);
  return a.launch(items(y.numel), call, err);
}

remat_status bias_add(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return add_bias(l, call, *call.inputs[0], *call.inputs[1], *call.outputs[0], err);
}

// db[j] = sum_r dy[r, j] over dy viewed as [rows, nb]: blocked column sums (reduce_leading_blocks
// blocks of plan/gpu_scratch.h's gpu_column_block_rows() rows by column tiles, then the blocks'
// partials added in block order), so that a tall dy with a layer's 768 or 1024 columns still
// fills a GPU; exact float32 adds even in tf32 plans, a 16-bit dy read as it is.
remat_status reduce_leading(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& dy = *call.inputs[0];
  const TensorRef& db = *call.outputs[0];
  const int64_t nb = db.numel, rows = dy.numel / nb;
  const int64_t blocks = reduce_leading_blocks(call);
  uint64_t base = 0;
  remat_status status = scratch_base(l, call, &base, err);
  if (status != REMAT_OK) return status;
  const TensorRef partial = workspace_tensor(base, blocks * nb);
  Args partials(l, kKernel_column_block_partials);
  partials.typed(dy).tensor(partial).u64(rows).u64(nb).u64(gpu_column_block_rows(rows)).scratch();
  status = partials.launch_column_tiles(nb, blocks, call, err);
  if (status != REMAT_OK) return status;
  Args sum(l, kKernel_column_blocks_sum);
  sum.tensor(partial).typed(db).typed(db).u64(nb).u64(blocks).u32(1);
  return sum.launch(items(nb), call, err);
}

remat_status dropout(Launcher& l, const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  return dropout_mask(l, call, ctx, err);
}
remat_status dropout_grad(Launcher& l, const OpCall& call, const StepContext& ctx,
                          ErrorBuffer* err) {
  return dropout_mask(l, call, ctx, err);
}

}  // namespace gpu
}  // namespace remat
