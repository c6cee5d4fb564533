// Per-op validation (plan/op_check.h) of the ops of op_check_spatial.cc, conv to increment:
// each rule refuses bad attribute values and shape relations with REMAT_ERROR_BAD_SHAPE and a
// message naming the attribute or tensor and the values involved, and accepts the legal
// variants next to them (no bias, conv1d, ceil mode, rank 2 batch norm). Expected sizes are
// worked out by hand in the comments, from the catalogue's formulas.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include "plan/op_check.h"
#include "plan/ops.h"
#include "op_check_cases.h"

using remat::OpCode;

namespace {

// |op|'s well-formed case after |edit|: refused with BAD_SHAPE and every string of |parts|.
template <typename Edit>
void rejected(OpCode op, Edit edit, std::initializer_list<const char*> parts) {
  Case c(op);
  build(c);
  edit(c);
  expect(c, REMAT_ERROR_BAD_SHAPE, parts);
}

// |op|'s well-formed case after |edit|: accepted.
template <typename Edit>
void accepted(OpCode op, Edit edit) {
  Case c(op);
  build(c);
  edit(c);
  expect(c, REMAT_OK);
}

// An edit setting iattr |i| to |v|, fattr |i| to |v|, or input / output |i|'s dims.
auto ia(uint32_t i, int64_t v) {
  return [=](Case& c) { c.iattrs[i] = v; };
}
auto fa(uint32_t i, float v) {
  return [=](Case& c) { c.fattrs[i] = v; };
}
auto in(uint32_t i, std::initializer_list<int64_t> d) {
  return [=](Case& c) { c.in_shape(i, d); };
}
auto out(uint32_t i, std::initializer_list<int64_t> d) {
  return [=](Case& c) { c.out_shape(i, d); };
}
// Edit |a|, then edit |b|.
template <typename A, typename B>
auto both(A a, B b) {
  return [=](Case& c) {
    a(c);
    b(c);
  };
}

const OpCode kConvOps[] = {OpCode::kConv, OpCode::kConvGradInput, OpCode::kConvGradWeight};
const OpCode kPoolOps[] = {OpCode::kMaxPool, OpCode::kMaxPoolGrad, OpCode::kAvgPool,
                           OpCode::kAvgPoolGrad};

// ---- conv, conv_grad_input, conv_grad_weight ----------------------------------------------------

void conv_with_zero_stride_or_dilation_or_negative_pad_is_rejected(void**) {
  for (OpCode op : kConvOps) {
    rejected(op, ia(0, 0), {"iattr 0 (stride_h) is 0", "expected 1..1048576"});
    rejected(op, ia(1, 0), {"iattr 1 (stride_w) is 0"});
    rejected(op, ia(1, k2p20 + 1), {"iattr 1 (stride_w) is 1048577"});
    rejected(op, ia(2, -1), {"iattr 2 (pad_h) is -1", "expected 0..1048576"});
    rejected(op, ia(3, -1), {"iattr 3 (pad_w) is -1"});
    rejected(op, ia(4, 0), {"iattr 4 (dilation_h) is 0"});
    rejected(op, ia(5, -2), {"iattr 5 (dilation_w) is -2"});
    rejected(op, ia(6, 0), {"iattr 6 (groups) is 0"});
  }
}

void conv_with_groups_not_dividing_channels_is_rejected(void**) {
  // C = 4, K = 6: groups 3 divides K only, groups 4 divides C only.
  rejected(OpCode::kConv, ia(6, 3),
           {"iattr 6 (groups) is 3",
            "expected a divisor of C = 4 (input 0 (x)) and K = 6 (input 1 (w))"});
  rejected(OpCode::kConv, both(ia(6, 4), in(1, {6, 1, 3, 3})), {"iattr 6 (groups) is 4", "K = 6"});
  rejected(OpCode::kConvGradInput, ia(6, 3), {"iattr 6 (groups) is 3", "output 0 (dx)"});
  rejected(OpCode::kConvGradWeight, ia(6, 4), {"iattr 6 (groups) is 4", "output 0 (dw)"});
}

void conv_with_filters_of_another_channel_count_than_c_over_groups_is_rejected(void**) {
  rejected(OpCode::kConv, in(1, {6, 4, 3, 3}),
           {"input 1 (w) has dims [6, 4, 3, 3]", "expected dim 1 = C / groups = 2"});
  rejected(OpCode::kConv, ia(6, 1), {"input 1 (w) has dims [6, 2, 3, 3]", "C / groups = 4"});
  rejected(OpCode::kConvGradInput, in(1, {6, 1, 3, 3}), {"input 1 (w) has dims [6, 1, 3, 3]"});
  rejected(OpCode::kConvGradWeight, out(0, {6, 3, 3, 3}), {"output 0 (dw) has dims [6, 3, 3, 3]"});
  rejected(OpCode::kConv, in(1, {6, 2, 3}),
           {"input 1 (w) has dims [6, 2, 3]", "rank 3, expected 4"});
}

void conv_with_output_dims_other_than_n_k_p_q_is_rejected(void**) {
  // 8 + 2 * 1 - 1 * (3 - 1) - 1 = 7, / 1 + 1 = 8.
  rejected(OpCode::kConv, out(0, {2, 6, 7, 8}),
           {"output 0 (y) has dims [2, 6, 7, 8]", "expected [N, K, P, Q] [2, 6, 8, 8]"});
  rejected(OpCode::kConv, out(0, {2, 5, 8, 8}), {"output 0 (y)", "[2, 6, 8, 8]"});
  rejected(OpCode::kConv, out(0, {3, 6, 8, 8}), {"output 0 (y)", "[2, 6, 8, 8]"});
  rejected(OpCode::kConv, out(0, {2, 6, 64}), {"output 0 (y) has dims [2, 6, 64]"});
  // Stride 2: (8 + 2 - 2 - 1) / 2 + 1 = 4.
  rejected(OpCode::kConv, ia(0, 2), {"output 0 (y) has dims [2, 6, 8, 8]", "[2, 6, 4, 8]"});
  rejected(OpCode::kConvGradInput, in(0, {2, 6, 8, 7}), {"input 0 (dy) has dims [2, 6, 8, 7]"});
  rejected(OpCode::kConvGradInput, out(0, {2, 4, 8, 9}), {"input 0 (dy)", "[2, 6, 8, 9]"});
  rejected(OpCode::kConvGradWeight, in(0, {2, 6, 9, 8}), {"input 0 (dy) has dims [2, 6, 9, 8]"});
  rejected(OpCode::kConvGradWeight, out(0, {4, 2, 3, 3}), {"input 0 (dy)", "[2, 4, 8, 8]"});
}

void conv_whose_filter_does_not_fit_the_padded_input_is_rejected(void**) {
  for (OpCode op : kConvOps) {
    // Padding 0: 8 - 2 * 4 - 1 < 0 with dilation 4; 2 + 0 - 3 < 0 for a 2x2 input.
    rejected(op, both(ia(2, 0), ia(4, 4)), {"the window does not fit", "[2, 4, 8, 8]"});
    rejected(op, both(ia(3, 0), ia(5, 5)), {"the window does not fit", "output"});
  }
  rejected(OpCode::kConv, both(both(ia(2, 0), ia(3, 0)), in(0, {2, 4, 2, 2})),
           {"the window does not fit input 0 (x) [2, 4, 2, 2]"});
}

void conv_grad_input_workspace_missing_superfluous_or_of_another_size_is_rejected(void**) {
  // Stride 2: dy [2, 6, 4, 4], and the workspace is C/groups * R * S * P * Q = 2 * 9 * 16.
  Case strided(OpCode::kConvGradInput);
  strided.in(F32, {2, 6, 4, 4}).in(F32, {6, 2, 3, 3}).out(F32, {2, 4, 8, 8}).out(F32, {288});
  strided.ia({2, 2, 1, 1, 1, 1, 2});
  expect(strided, REMAT_OK);
  strided.out_shape(1, {287});
  expect(strided, REMAT_ERROR_BAD_SHAPE, {"output 1 (workspace) has dims [287]", "= 288"});
  strided.out_shape(1, {2, 288});
  expect(strided, REMAT_ERROR_BAD_SHAPE, {"output 1 (workspace) has dims [2, 288]"});
  strided.num_out = 1;
  expect(strided, REMAT_ERROR_BAD_SHAPE,
         {"output 1 (workspace) is missing", "expected 288 elements"});
  // Unit stride: the input gradient is a convolution of dy, with no workspace.
  rejected(OpCode::kConvGradInput, [](Case& c) { c.out(F32, {1152}); },
           {"output 1 (workspace) is given, expected none", "unit stride"});
  // 1x1 at stride 2 scatters its columns: 4 * 1 * 1 * 4 * 4 = 64.
  Case pointwise(OpCode::kConvGradInput);
  pointwise.in(F32, {2, 6, 4, 4})
      .in(F32, {6, 4, 1, 1})
      .out(F32, {2, 4, 8, 8})
      .ia({2, 2, 0, 0, 1, 1, 1});
  expect(pointwise, REMAT_ERROR_BAD_SHAPE, {"output 1 (workspace) is missing", "expected 64"});
  pointwise.out(F32, {64});
  expect(pointwise, REMAT_OK);
  // Depthwise (one input channel per group, multiplier 2) runs direct loops at any stride.
  Case depthwise(OpCode::kConvGradInput);
  depthwise.in(F32, {2, 8, 4, 4})
      .in(F32, {8, 1, 3, 3})
      .out(F32, {2, 4, 8, 8})
      .ia({2, 2, 1, 1, 1, 1, 4});
  expect(depthwise, REMAT_OK);
  depthwise.out(F32, {144});
  expect(depthwise, REMAT_ERROR_BAD_SHAPE, {"output 1 (workspace) is given, expected none"});
  // The forward op and the weight gradient have no workspace slot at all.
  for (OpCode op : {OpCode::kConv, OpCode::kConvGradWeight}) {
    Case c(op);
    build(c);
    c.out(F32, {1152});
    expect(c, REMAT_ERROR_BAD_ARITY, {"2 outputs, expected 1"});
  }
}

void conv_bias_not_of_k_elements_is_rejected_and_no_bias_is_accepted(void**) {
  rejected(OpCode::kConv, in(2, {5}), {"input 2 (bias) has dims [5]", "expected K = 6"});
  rejected(OpCode::kConv, in(2, {2, 6}), {"input 2 (bias) has dims [2, 6]", "expected K = 6"});
  accepted(OpCode::kConv, [](Case& c) { c.num_in = 2; });
}

void conv_on_rank_3_needs_neutral_height_attributes(void**) {
  // conv1d: x [2, 4, 8], w [6, 2, 3]: y [2, 6, 8].
  auto conv1d = [](Case& c) {
    c.in_shape(0, {2, 4, 8}).in_shape(1, {6, 2, 3}).out_shape(0, {2, 6, 8});
    c.ia({1, 1, 0, 1, 1, 1, 2});
  };
  accepted(OpCode::kConv, conv1d);
  rejected(OpCode::kConv, both(conv1d, ia(0, 2)),
           {"iattr 0 (stride_h) is 2, expected 1", "input 0 (x) [2, 4, 8]", "rank 3"});
  rejected(OpCode::kConv, both(conv1d, ia(2, 1)), {"iattr 2 (pad_h) is 1, expected 0", "rank 3"});
  rejected(OpCode::kConv, both(conv1d, ia(4, 2)), {"iattr 4 (dilation_h) is 2, expected 1"});
  rejected(OpCode::kConv, both(conv1d, in(1, {6, 2, 1, 3})),
           {"input 1 (w) has dims [6, 2, 1, 3]", "rank 4, expected 3"});
  rejected(OpCode::kConv, in(0, {2, 4, 8, 8, 1}),
           {"input 0 (x) has dims [2, 4, 8, 8, 1]", "rank 5"});
  rejected(OpCode::kConv, in(0, {4, 64}), {"input 0 (x) has dims [4, 64]", "rank 2"});
}

// ---- channel_sum --------------------------------------------------------------------------------

void channel_sum_needs_rank_2_and_one_value_per_channel(void**) {
  rejected(OpCode::kChannelSum, in(0, {6}), {"input 0 (dy) has dims [6]: rank 1, expected >= 2"});
  rejected(OpCode::kChannelSum, out(0, {8}), {"output 0 (db) has dims [8]", "expected C = 6"});
  accepted(OpCode::kChannelSum, [](Case& c) { c.in_shape(0, {5, 6}); });
}

// ---- max_pool, avg_pool and their gradients -----------------------------------------------------

void pool_with_zero_kernel_or_stride_is_rejected(void**) {
  for (OpCode op : kPoolOps) {
    rejected(op, ia(0, 0), {"iattr 0 (kernel_h) is 0", "expected 1..1048576"});
    rejected(op, ia(1, -3), {"iattr 1 (kernel_w) is -3"});
    rejected(op, ia(2, 0), {"iattr 2 (stride_h) is 0"});
    rejected(op, ia(3, 0), {"iattr 3 (stride_w) is 0"});
  }
}

void pool_with_negative_pad_or_pad_over_half_the_kernel_is_rejected(void**) {
  for (OpCode op : kPoolOps) {
    rejected(op, ia(4, -1), {"iattr 4 (pad_h) is -1", "expected 0..1"});
    rejected(op, ia(5, 2), {"iattr 5 (pad_w) is 2", "expected 0..1"});
    // A 2-wide kernel takes pad 1, a 1-wide one none.
    rejected(op, [](Case& c) { c.iattrs[1] = 1; }, {"iattr 5 (pad_w) is 1", "expected 0..0"});
  }
}

void pool_flags_other_than_0_and_1_are_rejected(void**) {
  for (OpCode op : kPoolOps)
    rejected(op, ia(6, 2), {"iattr 6 (ceil_mode) is 2", "expected 0 or 1"});
  rejected(OpCode::kAvgPool, ia(7, -1), {"iattr 7 (count_include_pad) is -1", "expected 0 or 1"});
  rejected(OpCode::kAvgPoolGrad, ia(7, 2), {"iattr 7 (count_include_pad) is 2"});
  accepted(OpCode::kAvgPool, ia(7, 0));
}

void pool_output_must_have_the_floor_or_ceil_size(void**) {
  // 7x7, kernel 3, stride 2, padding 1: (7 + 2 - 3) / 2 + 1 = 4 either way.
  rejected(OpCode::kMaxPool, out(0, {2, 3, 3, 4}),
           {"output 0 (y) has dims [2, 3, 3, 4]", "expected the pooled size [2, 3, 4, 4]"});
  rejected(OpCode::kAvgPool, out(0, {2, 4, 4, 4}), {"output 0 (y)", "[2, 3, 4, 4]"});
  rejected(OpCode::kMaxPoolGrad, in(0, {2, 3, 4, 5}), {"input 0 (dy) has dims [2, 3, 4, 5]"});
  rejected(OpCode::kAvgPoolGrad, in(0, {1, 3, 4, 4}), {"input 0 (dy) has dims [1, 3, 4, 4]"});
  rejected(OpCode::kAvgPoolGrad, out(0, {2, 4, 7, 7}), {"input 0 (dy)", "[2, 4, 4, 4]"});
  rejected(OpCode::kMaxPoolGrad, out(0, {2, 3, 7, 8}),
           {"output 0 (dx) has dims [2, 3, 7, 8]", "expected [2, 3, 7, 7] as input 1 (x)"});
  // 6x6: floor (6 + 2 - 3) / 2 + 1 = 3, ceil 4 (the last window starts at 5, inside x).
  for (OpCode op : {OpCode::kMaxPool, OpCode::kAvgPool}) {
    auto six = [](int64_t ceil_mode, int64_t p) {
      return [=](Case& c) {
        c.in_shape(0, {2, 3, 6, 6}).out_shape(0, {2, 3, p, p});
        c.iattrs[6] = ceil_mode;
      };
    };
    accepted(op, six(0, 3));
    accepted(op, six(1, 4));
    rejected(op, six(1, 3), {"output 0 (y) has dims [2, 3, 3, 3]", "[2, 3, 4, 4]"});
    rejected(op, six(0, 4), {"output 0 (y) has dims [2, 3, 4, 4]", "[2, 3, 3, 3]"});
  }
  // 5x5, kernel 2, stride 2, padding 1: ceil would give 4, but that window starts in the padding.
  auto five = [](Case& c) {
    c.in_shape(0, {1, 1, 5, 5}).out_shape(0, {1, 1, 3, 3}).ia({2, 2, 2, 2, 1, 1, 1});
  };
  accepted(OpCode::kMaxPool, five);
  rejected(OpCode::kMaxPool, both(five, out(0, {1, 1, 4, 4})), {"[1, 1, 3, 3]"});
}

void pool_window_larger_than_the_padded_input_is_rejected(void**) {
  rejected(OpCode::kMaxPool, both(in(0, {2, 3, 2, 7}), ia(4, 0)),
           {"the window does not fit input 0 (x) [2, 3, 2, 7]"});
  rejected(OpCode::kAvgPoolGrad, both(out(0, {2, 3, 7, 1}), ia(5, 0)),
           {"the window does not fit output 0 (dx) [2, 3, 7, 1]"});
}

void pool_on_rank_3_needs_neutral_height_attributes(void**) {
  // pool1d: x [2, 3, 7], kernel 3, stride 2, padding 1: y [2, 3, 4].
  auto pool1d = [](Case& c) {
    c.in_shape(0, {2, 3, 7}).out_shape(0, {2, 3, 4});
    c.iattrs[0] = 1;
    c.iattrs[2] = 1;
    c.iattrs[4] = 0;
  };
  for (OpCode op : {OpCode::kMaxPool, OpCode::kAvgPool}) {
    accepted(op, pool1d);
    rejected(op, both(pool1d, ia(0, 3)), {"iattr 0 (kernel_h) is 3, expected 1", "rank 3"});
    rejected(op, both(pool1d, ia(2, 2)), {"iattr 2 (stride_h) is 2, expected 1"});
    rejected(op, both(pool1d, ia(4, 1)), {"iattr 4 (pad_h) is 1"});
    rejected(op, in(0, {2, 49}), {"input 0 (x) has dims [2, 49]: rank 2, expected 3"});
  }
}

void max_pool_dilations_are_checked_and_may_be_left_out(void**) {
  // 7x7, kernel 3, stride 2, padding 1, dilation 2: (7 + 2 - 2 * 2 - 1) / 2 + 1 = 3.
  auto dilated = [](Case& c) { c.out_shape(0, {2, 3, 3, 3}).ia({3, 3, 2, 2, 1, 1, 0, 2, 2}); };
  accepted(OpCode::kMaxPool, dilated);
  rejected(OpCode::kMaxPool, both(dilated, out(0, {2, 3, 4, 4})),
           {"output 0 (y) has dims [2, 3, 4, 4]", "[2, 3, 3, 3]"});
  rejected(OpCode::kMaxPool, both(dilated, ia(7, 0)), {"iattr 7 (dilation_h) is 0"});
  rejected(OpCode::kMaxPoolGrad,
           [](Case& c) {
             c.in_shape(0, {2, 3, 3, 3}).ia({3, 3, 2, 2, 1, 1, 0, 2, -1});
           },
           {"iattr 8 (dilation_w) is -1"});
  // A plan written before the dilations ends the list at ceil_mode (7) or gives only dilation_h.
  accepted(OpCode::kMaxPool, [](Case& c) { c.ia({3, 3, 2, 2, 1, 1, 0}); });
  accepted(OpCode::kMaxPool, [](Case& c) { c.ia({3, 3, 2, 2, 1, 1, 0, 1}); });
  Case six(OpCode::kMaxPool), nine(OpCode::kAvgPool);
  build(six);
  six.ia({3, 3, 2, 2, 1, 1});
  expect(six, REMAT_ERROR_BAD_ARITY, {"6 iattrs, expected 7..9"});
  build(nine);
  nine.ia({3, 3, 2, 2, 1, 1, 0, 1, 1});
  expect(nine, REMAT_ERROR_BAD_ARITY, {"9 iattrs, expected 8"});
  // pool1d has no height to dilate.
  rejected(OpCode::kMaxPool,
           [](Case& c) {
             c.in_shape(0, {2, 3, 7}).out_shape(0, {2, 3, 4}).ia({1, 3, 1, 2, 0, 1, 0, 2, 1});
           },
           {"iattr 7 (dilation_h) is 2, expected 1"});
}

// ---- global_avg_pool and its gradient -----------------------------------------------------------

void global_avg_pool_needs_n_by_c_values(void**) {
  rejected(OpCode::kGlobalAvgPool, out(0, {2, 4}),
           {"output 0 (y) has dims [2, 4]", "expected [N, C] = [2, 3]"});
  rejected(OpCode::kGlobalAvgPool, out(0, {2, 3, 1, 1}),
           {"output 0 (y) has dims [2, 3, 1, 1]", "rank 4, expected 2"});
  rejected(OpCode::kGlobalAvgPool, in(0, {2, 3}), {"input 0 (x) has dims [2, 3]", "rank 2"});
  accepted(OpCode::kGlobalAvgPool, in(0, {2, 3, 20}));
  rejected(OpCode::kGlobalAvgPoolGrad, out(0, {3, 3, 4, 5}),
           {"input 0 (dy) has dims [2, 3]", "[3, 3]"});
  rejected(OpCode::kGlobalAvgPoolGrad, out(0, {2, 3, 1, 4, 5}), {"output 0 (dx)", "rank 5"});
}

// ---- batch norm ---------------------------------------------------------------------------------

void batch_norm_per_channel_tensors_of_another_size_are_rejected(void**) {
  rejected(OpCode::kBatchNorm, in(1, {4}), {"input 1 (gamma) has dims [4]", "expected C = 3"});
  rejected(OpCode::kBatchNorm, in(2, {1}), {"input 2 (beta) has dims [1]", "expected C = 3"});
  rejected(OpCode::kBatchNorm, out(1, {2}), {"output 1 (mean) has dims [2]", "C = 3"});
  rejected(OpCode::kBatchNorm, out(2, {4, 3}), {"output 2 (var) has dims [4, 3]", "C = 3"});
  rejected(OpCode::kBatchNormGrad, in(2, {5}), {"input 2 (mean) has dims [5]", "C = 3"});
  rejected(OpCode::kBatchNormGrad, in(3, {5}), {"input 3 (var) has dims [5]"});
  rejected(OpCode::kBatchNormGrad, in(4, {5}), {"input 4 (gamma) has dims [5]"});
  rejected(OpCode::kBatchNormGrad, out(1, {5}), {"output 1 (dgamma) has dims [5]"});
  rejected(OpCode::kBatchNormGrad, out(2, {5}), {"output 2 (dbeta) has dims [5]"});
  rejected(OpCode::kBatchNormInference, in(3, {4}), {"input 3 (running_mean) has dims [4]"});
  rejected(OpCode::kBatchNormInference, in(4, {2}), {"input 4 (running_var) has dims [2]"});
}

void batch_norm_with_zero_or_negative_eps_is_rejected(void**) {
  for (OpCode op : {OpCode::kBatchNorm, OpCode::kBatchNormGrad, OpCode::kBatchNormInference}) {
    rejected(op, fa(0, 0.0f), {"fattr 0 (eps) is 0", "expected > 0"});
    rejected(op, fa(0, -1e-5f), {"fattr 0 (eps) is -1e-05"});
  }
}

void batch_norm_input_of_rank_1_or_5_or_other_dims_is_rejected(void**) {
  for (OpCode op : {OpCode::kBatchNorm, OpCode::kBatchNormInference}) {
    rejected(op, both(in(0, {4, 3, 5, 5, 1}), out(0, {4, 3, 5, 5, 1})),
             {"input 0 (x) has dims [4, 3, 5, 5, 1]: rank 5, expected 2 to 4"});
    rejected(op, in(0, {3}), {"input 0 (x) has dims [3]: rank 1"});
    rejected(op, out(0, {4, 3, 25}),
             {"output 0 (y) has dims [4, 3, 25]", "expected [4, 3, 5, 5] as input 0 (x)"});
    accepted(op, [](Case& c) { c.in_shape(0, {8, 3}).out_shape(0, {8, 3}); });
    accepted(op, [](Case& c) { c.in_shape(0, {8, 3, 7}).out_shape(0, {8, 3, 7}); });
  }
  rejected(OpCode::kBatchNormGrad, in(0, {4, 3, 5, 4}),
           {"input 0 (dy) has dims [4, 3, 5, 4]", "as input 1 (x)"});
  rejected(OpCode::kBatchNormGrad, out(0, {4, 3, 25}), {"output 0 (dx) has dims [4, 3, 25]"});
  rejected(OpCode::kBatchNormGrad,
           [](Case& c) { c.in_shape(0, {6}).in_shape(1, {6}).out_shape(0, {6}); },
           {"input 1 (x) has dims [6]: rank 1"});
}

void running_stat_update_with_momentum_outside_0_1_or_bad_correction_is_rejected(void**) {
  const OpCode op = OpCode::kRunningStatUpdate;
  rejected(op, fa(0, 1.5f), {"fattr 0 (momentum) is 1.5", "expected in [0, 1]"});
  rejected(op, fa(0, -0.1f), {"fattr 0 (momentum) is -0.1"});
  accepted(op, fa(0, 0.0f));
  accepted(op, fa(0, 1.0f));
  rejected(op, fa(1, 0.0f), {"fattr 1 (correction) is 0", "expected > 0"});
  rejected(op, fa(1, -2.0f), {"fattr 1 (correction) is -2"});
  rejected(op, in(1, {4}),
           {"input 1 (batch) has dims [4]", "expected 3 elements as input 0 (running)"});
  rejected(op, out(0, {3, 1}),
           {"output 0 (running) has dims [3, 1]", "expected [3] as input 0 (running)"});
}

// ---- pad and pad_grad ---------------------------------------------------------------------------

void pad_with_negative_or_huge_amounts_is_rejected(void**) {
  for (OpCode op : {OpCode::kPad, OpCode::kPadGrad}) {
    rejected(op, ia(0, -1), {"iattr 0 (top) is -1", "expected 0..1048576"});
    rejected(op, ia(1, -1), {"iattr 1 (bottom) is -1"});
    rejected(op, ia(2, -1), {"iattr 2 (left) is -1"});
    rejected(op, ia(3, k2p20 + 1), {"iattr 3 (right) is 1048577"});
  }
}

void pad_output_must_have_the_padded_size(void**) {
  // [2, 3, 4, 5] padded by top 1, bottom 2, left 3, right 0: [2, 3, 7, 8].
  rejected(OpCode::kPad, out(0, {2, 3, 7, 7}),
           {"output 0 (y) has dims [2, 3, 7, 7]", "expected the padded size [2, 3, 7, 8]"});
  rejected(OpCode::kPad, out(0, {2, 4, 7, 8}), {"output 0 (y)", "[2, 3, 7, 8]"});
  rejected(OpCode::kPadGrad, out(0, {2, 3, 4, 6}),
           {"input 0 (dy) has dims [2, 3, 7, 8]", "[2, 3, 7, 9]"});
  rejected(OpCode::kPad, in(0, {6, 20}), {"input 0 (x) has dims [6, 20]: rank 2"});
  // Rank 3 pads the length only.
  auto pad1d = [](Case& c) { c.in_shape(0, {2, 3, 5}).out_shape(0, {2, 3, 8}).ia({0, 0, 3, 0}); };
  accepted(OpCode::kPad, pad1d);
  rejected(OpCode::kPad, both(pad1d, ia(0, 1)), {"iattr 0 (top) is 1, expected 0", "rank 3"});
  rejected(OpCode::kPad, both(pad1d, ia(1, 2)), {"iattr 1 (bottom) is 2, expected 0"});
}

// ---- concat and slice ---------------------------------------------------------------------------

void concat_with_disagreeing_dims_a_wrong_sum_or_a_bad_axis_is_rejected(void**) {
  // a [2, 3, 4], b [2, 5, 4], c [2, 1, 4] along axis 1: y [2, 9, 4].
  rejected(OpCode::kConcat, in(1, {2, 5, 3}),
           {"input 1 (b) has dims [2, 5, 3]",
            "expected the dims of output 0 (y) [2, 9, 4] but along axis 1"});
  rejected(OpCode::kConcat, in(0, {3, 3, 4}), {"input 0 (a) has dims [3, 3, 4]"});
  rejected(OpCode::kConcat, in(2, {2, 1, 4, 1}), {"input 2 (c) has dims [2, 1, 4, 1]"});
  rejected(OpCode::kConcat, out(0, {2, 8, 4}),
           {"output 0 (y) has dims [2, 8, 4]", "expected 9 along axis 1"});
  rejected(OpCode::kConcat, out(0, {2, 10, 4}), {"expected 9 along axis 1, the inputs' sum"});
  rejected(OpCode::kConcat, ia(0, 3), {"iattr 0 (axis) is 3", "expected 0..2"});
  rejected(OpCode::kConcat, ia(0, -1), {"iattr 0 (axis) is -1"});
  rejected(OpCode::kConcat, ia(0, 0), {"input 0 (a) has dims [2, 3, 4]", "along axis 0"});
  accepted(OpCode::kConcat, [](Case& c) {
    c.num_in = 2;
    c.out_shape(0, {2, 8, 4});
  });
  accepted(OpCode::kConcat, [](Case& c) {
    c.in(F32, {2, 2, 4}).in(F32, {2, 7, 4}).out_shape(0, {2, 18, 4});
  });
}

void slice_past_the_end_or_with_disagreeing_dims_is_rejected(void**) {
  // x [2, 9, 4], y [2, 5, 4] along axis 1: offsets 0..4.
  rejected(OpCode::kSlice, ia(1, 5), {"iattr 1 (offset) is 5", "expected 0..4"});
  rejected(OpCode::kSlice, ia(1, -1), {"iattr 1 (offset) is -1"});
  accepted(OpCode::kSlice, ia(1, 4));
  rejected(OpCode::kSlice, out(0, {2, 10, 4}),
           {"output 0 (y) has dims [2, 10, 4]", "expected at most 9 along axis 1"});
  rejected(OpCode::kSlice, out(0, {2, 5, 3}),
           {"output 0 (y) has dims [2, 5, 3]", "input 0 (x) [2, 9, 4]"});
  rejected(OpCode::kSlice, out(0, {2, 5}), {"output 0 (y) has dims [2, 5]"});
  rejected(OpCode::kSlice, ia(0, 3), {"iattr 0 (axis) is 3", "expected 0..2"});
  rejected(OpCode::kSlice, ia(0, -1), {"iattr 0 (axis) is -1"});
}

// ---- increment (a batch norm's num_batches_tracked) ---------------------------------------------

void increment_needs_one_i64_counter_updated_in_place(void**) {
  rejected(OpCode::kIncrement, [](Case& c) { c.in_shape(0, {2}).out_shape(0, {2}); },
           {"input 0 (counter) has dims [2]", "expected 1 element"});
  rejected(OpCode::kIncrement, out(0, {1, 1}),
           {"output 0 (counter) has dims [1, 1]", "expected [1] as input 0 (counter)"});
  for (int side = 0; side < 2; ++side) {
    Case c(OpCode::kIncrement);
    build(c);
    c.view(side == 1, 0).dtype = I32;
    expect(c, REMAT_ERROR_BAD_DTYPE, {"has dtype i32", "expected i64"});
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(conv_with_zero_stride_or_dilation_or_negative_pad_is_rejected),
      cmocka_unit_test(conv_with_groups_not_dividing_channels_is_rejected),
      cmocka_unit_test(conv_with_filters_of_another_channel_count_than_c_over_groups_is_rejected),
      cmocka_unit_test(conv_with_output_dims_other_than_n_k_p_q_is_rejected),
      cmocka_unit_test(conv_whose_filter_does_not_fit_the_padded_input_is_rejected),
      cmocka_unit_test(
          conv_grad_input_workspace_missing_superfluous_or_of_another_size_is_rejected),
      cmocka_unit_test(conv_bias_not_of_k_elements_is_rejected_and_no_bias_is_accepted),
      cmocka_unit_test(conv_on_rank_3_needs_neutral_height_attributes),
      cmocka_unit_test(channel_sum_needs_rank_2_and_one_value_per_channel),
      cmocka_unit_test(pool_with_zero_kernel_or_stride_is_rejected),
      cmocka_unit_test(pool_with_negative_pad_or_pad_over_half_the_kernel_is_rejected),
      cmocka_unit_test(pool_flags_other_than_0_and_1_are_rejected),
      cmocka_unit_test(pool_output_must_have_the_floor_or_ceil_size),
      cmocka_unit_test(pool_window_larger_than_the_padded_input_is_rejected),
      cmocka_unit_test(pool_on_rank_3_needs_neutral_height_attributes),
      cmocka_unit_test(max_pool_dilations_are_checked_and_may_be_left_out),
      cmocka_unit_test(global_avg_pool_needs_n_by_c_values),
      cmocka_unit_test(batch_norm_per_channel_tensors_of_another_size_are_rejected),
      cmocka_unit_test(batch_norm_with_zero_or_negative_eps_is_rejected),
      cmocka_unit_test(batch_norm_input_of_rank_1_or_5_or_other_dims_is_rejected),
      cmocka_unit_test(running_stat_update_with_momentum_outside_0_1_or_bad_correction_is_rejected),
      cmocka_unit_test(pad_with_negative_or_huge_amounts_is_rejected),
      cmocka_unit_test(pad_output_must_have_the_padded_size),
      cmocka_unit_test(concat_with_disagreeing_dims_a_wrong_sum_or_a_bad_axis_is_rejected),
      cmocka_unit_test(slice_past_the_end_or_with_disagreeing_dims_is_rejected),
      cmocka_unit_test(increment_needs_one_i64_counter_updated_in_place),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
