// Convolutions on the GPU backends (kernels/conv.cl): conv, its input and weight gradients, and
// the bias gradient channel_sum (the two sums, and a chunk's matmul, as sum_part). Direct
// kernels, one launch per op; conv_grad_input's optional
// workspace output (the CPU's column-matrix gradient) is not used.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/batch_chunks.h"
#include "backends/shared/op_args.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace gpu {
namespace {

// The convolution of |call| whose input (or dx) is |x| and filters (or dw) |w|.
ConvShape shape_of(const OpCall& call, const TensorRef& x, const TensorRef& w) {
  return conv_shape(x.dims, w.dims, x.rank, conv_attrs(call.iattrs));
}

// Adds |c| as conv.cl's CONV_SHAPE_PARAMS.
void shape_args(Args& a, const ConvShape& c) {
  a.u64(c.x.n).u64(c.x.c).u64(c.x.h).u64(c.x.w).u64(c.k).u64(c.cg).u64(c.kg);
  a.u64(c.r).u64(c.s).u64(c.p).u64(c.q);
  a.u64(c.a.stride_h).u64(c.a.stride_w).u64(c.a.pad_h).u64(c.a.pad_w);
  a.u64(c.a.dilation_h).u64(c.a.dilation_w);
}

size_t items(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

remat_status conv(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& y = *call.outputs[0];
  const bool has_bias = call.num_inputs > 2;
  Args a(l, kKernel_conv);
  // Without a bias the bias arguments are never read: y stands in for them.
  a.tensor(*call.inputs[0]).tensor(*call.inputs[1]).tensor(has_bias ? *call.inputs[2] : y);
  a.i32(has_bias ? 1 : 0).tensor(y);
  shape_args(a, shape_of(call, *call.inputs[0], *call.inputs[1]));
  return a.launch(items(y.numel), call, err);
}

remat_status conv_grad_input(Launcher& l, const OpCall& call, const StepContext&,
                             ErrorBuffer* err) {
  const TensorRef& dx = *call.outputs[0];
  Args a(l, kKernel_conv_grad_input);
  a.tensor(*call.inputs[0]).tensor(*call.inputs[1]).tensor(dx);
  shape_args(a, shape_of(call, dx, *call.inputs[1]));
  return a.launch(items(dx.numel), call, err);
}

remat_status conv_grad_weight(Launcher& l, const OpCall& call, const StepContext& ctx,
                              ErrorBuffer* err) {
  return sum_part(l, call, ctx, {0, 0}, err);
}

remat_status channel_sum(Launcher& l, const OpCall& call, const StepContext& ctx,
                         ErrorBuffer* err) {
  return sum_part(l, call, ctx, {0, 0}, err);
}

remat_status sum_part(Launcher& l, const OpCall& call, const StepContext& ctx, BatchPart part,
                      ErrorBuffer* err) {
  const bool accumulate = part.first > 0;
  if (call.code == static_cast<uint16_t>(OpCode::kConvGradWeight)) {
    const TensorRef& dw = *call.outputs[0];
    Args a(l, kKernel_conv_grad_weight);
    a.tensor(*call.inputs[0]).tensor(*call.inputs[1]).tensor(dw).i32(accumulate ? 1 : 0);
    shape_args(a, shape_of(call, *call.inputs[1], dw));
    return a.launch(items(dw.numel), call, err);
  }
  if (call.code == static_cast<uint16_t>(OpCode::kChannelSum)) {
    // A team of work items per channel (row_team over the channel's images * inner elements).
    const TensorRef& dy = *call.inputs[0];
    const int64_t images = dy.dims[0], channels = dy.dims[1];
    const int64_t inner = images * channels > 0 ? dy.numel / (images * channels) : 0;
    const uint32_t team = row_team(l, kKernel_channel_sum, images * inner);
    Args a(l, kKernel_channel_sum);
    a.tensor(dy).tensor(*call.outputs[0]).i32(accumulate ? 1 : 0);
    a.u64(images).u64(channels).u64(inner).u32(team).scratch();
    return a.launch_rows(channels, team, call, err);
  }
  // A product whose C its chunks do not split sums over them: a reduce-mode one (C of rank 2,
  // without a bias) or one over a rank-2 A's rows (batch_chunks.h: matmul_rows, kSumOverRows).
  if (!splits_by_batch(call, *call.outputs[0])) return l.matmul(call, accumulate, err);
  return matmul(l, call, ctx, err);
}

}  // namespace gpu
}  // namespace remat
