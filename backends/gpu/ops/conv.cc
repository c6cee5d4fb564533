// Convolutions on the GPU backends (kernels/conv.cl): conv, its input and weight gradients, and
// the bias gradient channel_sum (the two sums, and a chunk's matmul, as sum_part). A convolution
// of one group runs as a GEMM on the backend's BLAS over column matrices in the op's scratch, a
// chunk of images at a time (plan/gpu_scratch.h: gpu_conv_chunk_images, at most 16 MiB): conv as
// the filters [K, C R S] times each image's columns [C R S, P Q] (one strided batch, the filters
// shared), then its bias; conv_grad_input as the filters' transpose times each image's dy
// [K, P Q], the columns' gradient folded back into dx; conv_grad_weight as the chunk's rows of dy
// [K, images P Q] times the columns' transpose, each chunk added to dw. A pointwise convolution's
// images are their own column matrices (plan/gpu_scratch.h: gpu_conv_pointwise): its conv and
// conv_grad_input read x and write dx in place, one batch, no scratch. Grouped (depthwise) ones,
// those of images too large for the scratch alone, and every one under REMAT_GPU_CONV=direct run
// as direct kernels, one launch per op. conv_grad_input's optional workspace output (the CPU's
// column-matrix gradient) is not used.
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/ops/ops.h"
#include "backends/shared/batch_chunks.h"
#include "backends/shared/op_args.h"
#include "plan/gpu_scratch.h"
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

// The filters' taps C R S of |c| (one group: cg is C), and its output positions P Q.
int64_t taps(const ConvShape& c) { return c.cg * c.r * c.s; }
int64_t positions(const ConvShape& c) { return c.p * c.q; }

// The shape of |call| (conv, conv_grad_input or conv_grad_weight) and where its images are.
ConvShape conv_call_shape(const OpCall& call) {
  if (call.code == static_cast<uint16_t>(OpCode::kConvGradInput))
    return shape_of(call, *call.outputs[0], *call.inputs[1]);
  if (call.code == static_cast<uint16_t>(OpCode::kConvGradWeight))
    return shape_of(call, *call.inputs[1], *call.outputs[0]);
  return shape_of(call, *call.inputs[0], *call.inputs[1]);
}

// REMAT_GPU_CONV=direct (read once): every convolution runs as the direct kernels, its column
// matrices' scratch unused, to measure them against the products (bench/gpu_conv.sh) or
// reproduce their bits.
bool products_allowed() {
  static const bool allowed = [] {
    const char* choice = getenv("REMAT_GPU_CONV");
    return choice == nullptr || strcmp(choice, "direct") != 0;
  }();
  return allowed;
}

// Floats one image of |call| takes in its scratch (plan/gpu_scratch.h: gpu_conv_image_floats):
// 0 for a pointwise conv or conv_grad_input, a grouped convolution and any other op.
int64_t conv_image_floats(const OpCall& call) {
  const bool grad_weight = call.code == static_cast<uint16_t>(OpCode::kConvGradWeight);
  if (!grad_weight && call.code != static_cast<uint16_t>(OpCode::kConv) &&
      call.code != static_cast<uint16_t>(OpCode::kConvGradInput))
    return 0;
  return gpu_conv_image_floats(conv_call_shape(call), grad_weight);
}

// Whether convolution op |call| runs on the BLAS: in place where it is pointwise (not a weight
// gradient), over column matrices in its scratch where it takes some; as direct kernels otherwise
// and under REMAT_GPU_CONV=direct.
bool by_products(const OpCall& call) {
  if (!products_allowed()) return false;
  return conv_image_floats(call) > 0 ||
         (call.code != static_cast<uint16_t>(OpCode::kConvGradWeight) &&
          gpu_conv_pointwise(conv_call_shape(call)));
}

// |t| ([n, ...] images of |image_floats| floats each) from image |first| on.
TensorRef images_from(const TensorRef& t, int64_t first, int64_t image_floats) {
  TensorRef at = t;
  at.offset += static_cast<uint64_t>(first * image_floats) * sizeof(float);
  return at;
}

// Launches conv_columns: the columns of |nb| images of x from image |first| into the workspace
// at |cols|.
remat_status columns(Launcher& l, const OpCall& call, const ConvShape& c, const TensorRef& x,
                     int64_t first, int64_t nb, uint64_t cols, ErrorBuffer* err) {
  Args a(l, kKernel_conv_columns);
  a.tensor(images_from(x, first, c.x.c * c.x.h * c.x.w))
      .tensor(workspace_tensor(cols, taps(c) * nb * positions(c)))
      .u64(nb);
  shape_args(a, c);
  return a.launch(items(taps(c) * nb * positions(c)), call, err);
}

// Calls body(first, nb, base) for each chunk of |c|'s images, nb of them from image |first|,
// with the scratch at workspace offset |base|.
template <typename Body>
remat_status for_each_image_chunk(Launcher& l, const OpCall& call, const ConvShape& c,
                                  ErrorBuffer* err, Body body) {
  uint64_t base = 0;
  const remat_status status = scratch_base(l, call, &base, err);
  if (status != REMAT_OK) return status;
  const int64_t chunk = gpu_conv_chunk_images(c.x.n, conv_image_floats(call));
  for (int64_t first = 0; first < c.x.n; first += chunk) {
    const int64_t nb = c.x.n - first < chunk ? c.x.n - first : chunk;
    const remat_status st = body(first, nb, base);
    if (st != REMAT_OK) return st;
  }
  return REMAT_OK;
}

// conv of one group: y's images = the filters times their columns, then the bias. A pointwise
// one's images are their own columns: one batch over x in place.
remat_status conv_by_columns(Launcher& l, const OpCall& call, const ConvShape& c,
                             ErrorBuffer* err) {
  const TensorRef &x = *call.inputs[0], &wt = *call.inputs[1], &y = *call.outputs[0];
  const int64_t crs = taps(c), pq = positions(c);
  // The filters times |nb| images' columns at |cols| into y's images from image |first|.
  auto product = [&](int64_t first, int64_t nb, const GemmOperand& cols) {
    const TensorRef out = images_from(y, first, c.k * pq);
    return l.gemm({false,
                   false,
                   c.k,
                   pq,
                   crs,
                   nb,
                   1.0f,
                   {wt.region, wt.offset, crs, 0},
                   cols,
                   {out.region, out.offset, pq, c.k * pq},
                   false},
                  call, err);
  };
  remat_status st = REMAT_OK;
  if (gpu_conv_pointwise(c)) {
    st = product(0, c.x.n, {x.region, x.offset, pq, crs * pq});
  } else {
    st = for_each_image_chunk(l, call, c, err, [&](int64_t first, int64_t nb, uint64_t base) {
      remat_status s = columns(l, call, c, x, first, nb, base, err);
      if (s != REMAT_OK) return s;
      return product(first, nb, {kWorkspaceRegion, base, nb * pq, pq});
    });
  }
  if (st != REMAT_OK || call.num_inputs < 3) return st;
  Args a(l, kKernel_conv_bias);
  a.tensor(y).tensor(*call.inputs[2]).u64(c.k).u64(pq).u64(y.numel);
  return a.launch(items(y.numel), call, err);
}

// conv_grad_input of one group: each image's columns' gradient = the filters' transpose times
// its dy, folded back into dx; a pointwise one's is dx's image itself, written in place.
remat_status conv_grad_input_by_columns(Launcher& l, const OpCall& call, const ConvShape& c,
                                        ErrorBuffer* err) {
  const TensorRef &dy = *call.inputs[0], &wt = *call.inputs[1], &dx = *call.outputs[0];
  const int64_t crs = taps(c), pq = positions(c);
  // The filters' transpose times |nb| images' dy from image |first| into |cols|.
  auto product = [&](int64_t first, int64_t nb, const GemmOperand& cols) {
    const TensorRef grad = images_from(dy, first, c.k * pq);
    return l.gemm({true,
                   false,
                   crs,
                   pq,
                   c.k,
                   nb,
                   1.0f,
                   {wt.region, wt.offset, crs, 0},
                   {grad.region, grad.offset, pq, c.k * pq},
                   cols,
                   false},
                  call, err);
  };
  if (gpu_conv_pointwise(c)) return product(0, c.x.n, {dx.region, dx.offset, pq, crs * pq});
  return for_each_image_chunk(l, call, c, err, [&](int64_t first, int64_t nb, uint64_t base) {
    remat_status s = product(first, nb, {kWorkspaceRegion, base, nb * pq, pq});
    if (s != REMAT_OK) return s;
    const int64_t image = c.x.c * c.x.h * c.x.w;
    Args a(l, kKernel_conv_columns_grad);
    a.tensor(workspace_tensor(base, crs * nb * pq)).tensor(images_from(dx, first, image)).u64(nb);
    shape_args(a, c);
    return a.launch(items(nb * image), call, err);
  });
}

// conv_grad_weight of one group: dw (+)= each chunk's dy rows [K, nb P Q] times its columns'
// transpose, added to dw after the first chunk or where |accumulate|.
remat_status conv_grad_weight_by_columns(Launcher& l, const OpCall& call, const ConvShape& c,
                                         bool accumulate, ErrorBuffer* err) {
  const TensorRef &dy = *call.inputs[0], &x = *call.inputs[1], &dw = *call.outputs[0];
  const int64_t crs = taps(c), pq = positions(c);
  return for_each_image_chunk(l, call, c, err, [&](int64_t first, int64_t nb, uint64_t base) {
    remat_status s = columns(l, call, c, x, first, nb, base, err);
    if (s != REMAT_OK) return s;
    const uint64_t rows = base + static_cast<uint64_t>(crs * nb * pq) * sizeof(float);
    Args a(l, kKernel_conv_grad_rows);
    a.tensor(images_from(dy, first, c.k * pq))
        .tensor(workspace_tensor(rows, c.k * nb * pq))
        .u64(nb)
        .u64(c.k)
        .u64(pq);
    s = a.launch(items(c.k * nb * pq), call, err);
    if (s != REMAT_OK) return s;
    return l.gemm({false,
                   true,
                   c.k,
                   crs,
                   nb * pq,
                   1,
                   1.0f,
                   {kWorkspaceRegion, rows, nb * pq, 0},
                   {kWorkspaceRegion, base, nb * pq, 0},
                   {dw.region, dw.offset, crs, 0},
                   accumulate || first > 0},
                  call, err);
  });
}

}  // namespace

uint64_t conv_scratch_bytes(const OpCall& call) {
  const int64_t image_floats = conv_image_floats(call);
  return image_floats > 0 ? gpu_conv_scratch_bytes(conv_call_shape(call).x.n, image_floats) : 0;
}

remat_status conv(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  if (by_products(call)) return conv_by_columns(l, call, conv_call_shape(call), err);
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
  if (by_products(call)) return conv_grad_input_by_columns(l, call, conv_call_shape(call), err);
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
    if (by_products(call))
      return conv_grad_weight_by_columns(l, call, conv_call_shape(call), accumulate, err);
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
