// Validation rules of the convolutional ops (plan/op_catalogue.h, conv to increment): attribute
// ranges and the NCHW shape relations, with sizes from plan/spatial_shape.h.
#include <cmath>

#include "plan/op_check_internal.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace op_check_internal {
namespace {

remat_status attr_in(Op& op, IntAttr a, int64_t lo, int64_t hi) {
  const int64_t v = op.attr(a);
  if (v >= lo && v <= hi) return REMAT_OK;
  return bad_shape(op).iattr(a).text(" is ").num(v).text(", expected ").num(lo).text("..").num(hi);
}

// A rank-3 tensor is [N, C, L]: the H attribute |a| must be |neutral|.
remat_status neutral_h(Op& op, IntAttr a, int64_t neutral, Slot x) {
  if (op.attr(a) == neutral) return REMAT_OK;
  return bad_shape(op)
      .iattr(a)
      .text(" is ")
      .num(op.attr(a))
      .text(", expected ")
      .num(neutral)
      .text(" for ")
      .tensor(x)
      .text(" ")
      .dims(x)
      .text(" (rank 3: [N, C, L] has no height)");
}

remat_status spatial_rank(Op& op, Slot x) {
  if (op.rank(x) == 3 || op.rank(x) == 4) return REMAT_OK;
  return bad_shape(op)
      .has_dims(x)
      .text(": rank ")
      .num(op.rank(x))
      .text(", expected 3 [N, C, L] or 4 [N, C, H, W]");
}

// |s| has the NCHW dims [n, c, h, w] in |rank| dims (rank 3: [n, c, w], h == 1).
remat_status nchw_is(Op& op, Slot s, int rank, int64_t n, int64_t c, int64_t h, int64_t w,
                     const char* what) {
  bool equal = op.rank(s) == rank && op.dim(s, 0) == n && op.dim(s, 1) == c && op.dim(s, -1) == w &&
               (rank == 3 || op.dim(s, 2) == h);
  if (equal) return REMAT_OK;
  Failure f =
      bad_shape(op).has_dims(s).text(", expected ").text(what).text(" [").num(n).text(", ").num(c);
  if (rank == 4) f.text(", ").num(h);
  return f.text(", ").num(w).text("]");
}

// An output length below 1: the window does not fit.
remat_status window_fits(Op& op, int64_t out_h, int64_t out_w, Slot x) {
  if (out_h >= 1 && out_w >= 1) return REMAT_OK;
  return bad_shape(op)
      .text("the window does not fit ")
      .tensor(x)
      .text(" ")
      .dims(x)
      .text(" (output ")
      .num(out_h)
      .text(" x ")
      .num(out_w)
      .text(")");
}

// conv, conv_grad_input, conv_grad_weight: |x| the input's dims (dx for conv_grad_input), |w|
// the filters (dw for conv_grad_weight), |y| the output's (dy for the gradients);
// |has_workspace_slot| for conv_grad_input, whose output 1 is the workspace.
remat_status check_conv(Op& op, Slot x, Slot w, Slot y, const char* y_what,
                        bool has_workspace_slot) {
  namespace a = attr::conv;  // the gradients' are alike (plan/spatial_shape.h)
  RETURN_IF_FAILED(attr_in(op, a::stride_h, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::stride_w, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::pad_h, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::pad_w, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::dilation_h, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::dilation_w, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::groups, 1, kMaxTensorElements));
  RETURN_IF_FAILED(spatial_rank(op, x));
  const int rank = op.rank(x);
  if (rank == 3) {
    RETURN_IF_FAILED(neutral_h(op, a::stride_h, 1, x));
    RETURN_IF_FAILED(neutral_h(op, a::pad_h, 0, x));
    RETURN_IF_FAILED(neutral_h(op, a::dilation_h, 1, x));
  }
  RETURN_IF_FAILED(rank_is(op, w, rank));
  const int64_t groups = op.attr(a::groups), c = op.dim(x, 1), k = op.dim(w, 0);
  if (c % groups != 0 || k % groups != 0) {
    return bad_shape(op)
        .iattr(a::groups)
        .text(" is ")
        .num(groups)
        .text(", expected a divisor of C = ")
        .num(c)
        .text(" (")
        .tensor(x)
        .text(") and K = ")
        .num(k)
        .text(" (")
        .tensor(w)
        .text(")");
  }
  if (op.dim(w, 1) != c / groups) {
    return bad_shape(op).has_dims(w).text(", expected dim 1 = C / groups = ").num(c / groups);
  }
  const ShapeView &vx = op.view(x), &vw = op.view(w);
  const ConvShape shape = conv_shape(vx.dims, vw.dims, rank, conv_attrs(op.iattrs));
  RETURN_IF_FAILED(window_fits(op, shape.p, shape.q, x));
  RETURN_IF_FAILED(nchw_is(op, y, rank, shape.x.n, k, shape.p, shape.q, y_what));
  if (!has_workspace_slot) return REMAT_OK;
  const int64_t workspace = conv_grad_input_workspace_elems(shape);
  if (workspace == 0 && op.num_out > 1) {
    return bad_shape(op)
        .tensor(Out(1))
        .text(" is given, expected none: this input gradient")
        .text(" needs no column matrix (unit stride, 1x1 or one input channel per group)");
  }
  if (workspace > 0 && op.num_out < 2) {
    return bad_shape(op)
        .text("output 1 (workspace) is missing, expected ")
        .num(workspace)
        .text(" elements (C/groups * R * S * P * Q)");
  }
  return workspace > 0 ? numel_is(op, Out(1), workspace, "C/groups * R * S * P * Q", x) : REMAT_OK;
}

// max_pool, avg_pool and their gradients: |x| the input (dx), |y| the output (dy).
remat_status check_pool(Op& op, Slot x, Slot y) {
  const bool average = op.code == static_cast<uint16_t>(OpCode::kAvgPool) ||
                       op.code == static_cast<uint16_t>(OpCode::kAvgPoolGrad);
  namespace ap = attr::avg_pool;  // max_pool's lack count_include_pad (plan/spatial_shape.h)
  namespace mp = attr::max_pool;  // and have dilations (a plan may end the list before them)
  RETURN_IF_FAILED(attr_in(op, ap::kernel_h, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, ap::kernel_w, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, ap::stride_h, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, ap::stride_w, 1, kMaxSpatialAttr));
  // torch: "pad should be at most half of effective kernel size".
  RETURN_IF_FAILED(attr_in(op, ap::pad_h, 0, op.attr(ap::kernel_h) / 2));
  RETURN_IF_FAILED(attr_in(op, ap::pad_w, 0, op.attr(ap::kernel_w) / 2));
  RETURN_IF_FAILED(flag_01(op, ap::ceil_mode));
  if (average) RETURN_IF_FAILED(flag_01(op, ap::count_include_pad));
  if (!average && op.num_iattrs > mp::dilation_h.index)
    RETURN_IF_FAILED(attr_in(op, mp::dilation_h, 1, kMaxSpatialAttr));
  if (!average && op.num_iattrs > mp::dilation_w.index)
    RETURN_IF_FAILED(attr_in(op, mp::dilation_w, 1, kMaxSpatialAttr));
  RETURN_IF_FAILED(spatial_rank(op, x));
  const int rank = op.rank(x);
  if (rank == 3) {
    RETURN_IF_FAILED(neutral_h(op, ap::kernel_h, 1, x));
    RETURN_IF_FAILED(neutral_h(op, ap::stride_h, 1, x));
  }
  const ShapeView& vx = op.view(x);
  const Nchw in = nchw_of(vx.dims, rank);
  if (rank == 3 && !average && op.num_iattrs > mp::dilation_h.index)
    RETURN_IF_FAILED(neutral_h(op, mp::dilation_h, 1, x));
  const PoolAttrs a = pool_attrs(op.iattrs, op.num_iattrs, average);
  const int64_t p = pool_out_size(in.h, a.kernel_h, a.stride_h, a.pad_h, a.dilation_h, a.ceil_mode);
  const int64_t q = pool_out_size(in.w, a.kernel_w, a.stride_w, a.pad_w, a.dilation_w, a.ceil_mode);
  RETURN_IF_FAILED(window_fits(op, p, q, x));
  return nchw_is(op, y, rank, in.n, in.c, p, q, "the pooled size");
}

// [N, C, ...] of rank 3 or 4 and its per-(n, c) value [N, C].
remat_status check_global_pool(Op& op, Slot x, Slot y) {
  RETURN_IF_FAILED(spatial_rank(op, x));
  RETURN_IF_FAILED(rank_is(op, y, 2));
  if (op.dim(y, 0) == op.dim(x, 0) && op.dim(y, 1) == op.dim(x, 1)) return REMAT_OK;
  return bad_shape(op)
      .has_dims(y)
      .text(", expected [N, C] = [")
      .num(op.dim(x, 0))
      .text(", ")
      .num(op.dim(x, 1))
      .text("] from ")
      .tensor(x)
      .text(" ")
      .dims(x);
}

// Batch norm's [N, C, ...] (rank 2 to 4) and per-channel tensors of C elements.
remat_status check_channels(Op& op, Slot x, const Slot* per_channel, int count) {
  if (op.rank(x) < 2 || op.rank(x) > 4) {
    return bad_shape(op)
        .has_dims(x)
        .text(": rank ")
        .num(op.rank(x))
        .text(", expected 2 to 4 ([N, C], [N, C, L] or [N, C, H, W])");
  }
  for (int i = 0; i < count; ++i)
    RETURN_IF_FAILED(numel_is(op, per_channel[i], op.dim(x, 1), "C", x));
  // The batch norms' eps, alike in all three (plan/op_catalogue.h).
  static_assert(attr::batch_norm_grad::eps.index == attr::batch_norm::eps.index &&
                    attr::batch_norm_inference::eps.index == attr::batch_norm::eps.index,
                "the batch norms' eps");
  return fattr_in(op, attr::batch_norm::eps, 0.0f, true, INFINITY);
}

// pad and pad_grad: |small| the unpadded tensor, |big| the padded one.
remat_status check_pad(Op& op, Slot small, Slot big) {
  namespace a = attr::pad;  // pad_grad's are alike (backends/shared/op_args.h)
  RETURN_IF_FAILED(attr_in(op, a::top, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::bottom, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::left, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(attr_in(op, a::right, 0, kMaxSpatialAttr));
  RETURN_IF_FAILED(spatial_rank(op, small));
  const int rank = op.rank(small);
  if (rank == 3) {
    RETURN_IF_FAILED(neutral_h(op, a::top, 0, small));
    RETURN_IF_FAILED(neutral_h(op, a::bottom, 0, small));
  }
  const Nchw in = nchw_of(op.view(small).dims, rank);
  return nchw_is(op, big, rank, in.n, in.c, in.h + op.attr(a::top) + op.attr(a::bottom),
                 in.w + op.attr(a::left) + op.attr(a::right), "the padded size");
}

// |part| equals |whole| but along |axis|, where it has |along| elements (checked by callers).
remat_status same_but_axis(Op& op, Slot part, Slot whole, int64_t axis) {
  bool equal = op.rank(part) == op.rank(whole);
  for (int i = 0; equal && i < op.rank(part); ++i)
    equal = i == axis || op.dim(part, i) == op.dim(whole, i);
  if (equal) return REMAT_OK;
  return bad_shape(op)
      .has_dims(part)
      .text(", expected the dims of ")
      .tensor(whole)
      .text(" ")
      .dims(whole)
      .text(" but along axis ")
      .num(axis);
}

remat_status axis_of(Op& op, Slot s) {
  static_assert(attr::slice::axis.index == attr::concat::axis.index, "concat and slice's axis");
  return attr_in(op, attr::concat::axis, 0, op.rank(s) - 1);
}

}  // namespace

remat_status rule_conv(Op& op) {
  RETURN_IF_FAILED(check_conv(op, In(0), In(1), Out(0), "[N, K, P, Q]", false));
  return op.num_in > 2 ? numel_is(op, In(2), op.dim(In(1), 0), "K", In(1)) : REMAT_OK;
}
remat_status rule_conv_grad_input(Op& op) {
  return check_conv(op, Out(0), In(1), In(0), "[N, K, P, Q]", true);
}
remat_status rule_conv_grad_weight(Op& op) {
  return check_conv(op, In(1), Out(0), In(0), "[N, K, P, Q]", false);
}

remat_status rule_channel_sum(Op& op) {
  if (op.rank(In(0)) < 2) {
    return bad_shape(op)
        .has_dims(In(0))
        .text(": rank ")
        .num(op.rank(In(0)))
        .text(", expected >= 2 [N, C, ...]");
  }
  return numel_is(op, Out(0), op.dim(In(0), 1), "C", In(0));
}

remat_status rule_max_pool(Op& op) { return check_pool(op, In(0), Out(0)); }
remat_status rule_max_pool_grad(Op& op) {
  RETURN_IF_FAILED(check_pool(op, In(1), In(0)));
  return same_dims(op, Out(0), In(1));
}
remat_status rule_avg_pool(Op& op) { return check_pool(op, In(0), Out(0)); }
remat_status rule_avg_pool_grad(Op& op) { return check_pool(op, Out(0), In(0)); }
remat_status rule_global_avg_pool(Op& op) { return check_global_pool(op, In(0), Out(0)); }
remat_status rule_global_avg_pool_grad(Op& op) { return check_global_pool(op, Out(0), In(0)); }

remat_status rule_batch_norm(Op& op) {
  const Slot per_channel[] = {In(1), In(2), Out(1), Out(2)};
  RETURN_IF_FAILED(check_channels(op, In(0), per_channel, 4));
  return same_dims(op, Out(0), In(0));
}
remat_status rule_batch_norm_grad(Op& op) {
  const Slot per_channel[] = {In(2), In(3), In(4), Out(1), Out(2)};
  RETURN_IF_FAILED(check_channels(op, In(1), per_channel, 5));
  RETURN_IF_FAILED(same_dims(op, In(0), In(1)));
  return same_dims(op, Out(0), In(1));
}
remat_status rule_batch_norm_inference(Op& op) {
  const Slot per_channel[] = {In(1), In(2), In(3), In(4)};
  RETURN_IF_FAILED(check_channels(op, In(0), per_channel, 4));
  return same_dims(op, Out(0), In(0));
}

remat_status rule_running_stat_update(Op& op) {
  const float momentum = op.attr(attr::running_stat_update::momentum);
  if (!(momentum >= 0.0f && momentum <= 1.0f)) {
    return bad_shape(op)
        .fattr(attr::running_stat_update::momentum)
        .text(" is ")
        .real(momentum)
        .text(", expected in [0, 1]");
  }
  RETURN_IF_FAILED(fattr_in(op, attr::running_stat_update::correction, 0.0f, true, INFINITY));
  RETURN_IF_FAILED(same_numel(op, In(1), In(0)));
  return same_dims(op, Out(0), In(0));
}

remat_status rule_pad(Op& op) { return check_pad(op, In(0), Out(0)); }
remat_status rule_pad_grad(Op& op) { return check_pad(op, Out(0), In(0)); }

remat_status rule_concat(Op& op) {
  RETURN_IF_FAILED(axis_of(op, Out(0)));
  const int64_t axis = op.attr(attr::concat::axis);
  int64_t along = 0;
  for (uint32_t i = 0; i < op.num_in; ++i) {
    RETURN_IF_FAILED(same_but_axis(op, In(i), Out(0), axis));
    along += op.dim(In(i), static_cast<int>(axis));
  }
  if (along == op.dim(Out(0), static_cast<int>(axis))) return REMAT_OK;
  return bad_shape(op)
      .has_dims(Out(0))
      .text(", expected ")
      .num(along)
      .text(" along axis ")
      .num(axis)
      .text(", the inputs' sum");
}

remat_status rule_slice(Op& op) {
  RETURN_IF_FAILED(axis_of(op, In(0)));
  const int64_t axis = op.attr(attr::slice::axis);
  RETURN_IF_FAILED(same_but_axis(op, Out(0), In(0), axis));
  const int64_t n = op.dim(In(0), static_cast<int>(axis)),
                m = op.dim(Out(0), static_cast<int>(axis));
  if (m > n) {
    return bad_shape(op)
        .has_dims(Out(0))
        .text(", expected at most ")
        .num(n)
        .text(" along axis ")
        .num(axis)
        .text(" as ")
        .tensor(In(0))
        .text(" ")
        .dims(In(0));
  }
  return attr_in(op, attr::slice::offset, 0, n - m);
}

remat_status rule_increment(Op& op) {
  RETURN_IF_FAILED(is_scalar(op, In(0)));
  return same_dims(op, Out(0), In(0));
}

}  // namespace op_check_internal
}  // namespace remat
