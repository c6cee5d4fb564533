// Per-op validation (plan/op_check.h) of the linear and elementwise ops: matmul, bias_add,
// reduce_leading, the elementwise ops, softmax and scale.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include <math.h>

#include "plan/op_check.h"
#include "plan/ops.h"
#include "op_check_cases.h"

using remat::OpCode;

namespace {

// ---- matmul -------------------------------------------------------------------------------------

void matmul_in_batched_broadcast_and_reduce_modes_is_accepted(void**) {
  Case batched(OpCode::kMatMul);
  batched.in(F32, {2, 4, 2, 3}).in(F32, {8, 3, 5}).out(F32, {8, 2, 5}).ia({0, 0}).fa({1.0f});
  expect(batched, REMAT_OK);
  Case broadcast(OpCode::kMatMul);
  broadcast.in(F32, {4, 2, 3}).in(F32, {5, 3}).out(F32, {4, 2, 5}).ia({0, 1}).fa({2.0f});
  expect(broadcast, REMAT_OK);
  Case reduce(OpCode::kMatMul);  // dW = dy^T x summed over a batch of 4.
  reduce.in(F32, {4, 2, 5}).in(F32, {4, 2, 3}).out(F32, {5, 3}).ia({1, 0}).fa({1.0f});
  expect(reduce, REMAT_OK);
}

void matmul_with_mismatched_inner_dims_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.in_shape(1, {4, 5});
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (B) has dims [4, 5]", "expected K = 3", "input 0 (A) [2, 3]"});
}

void matmul_with_transposed_operands_contracts_the_transposed_dims(void**) {
  Case c(OpCode::kMatMul);
  c.in(F32, {3, 2}).in(F32, {5, 3}).out(F32, {2, 5}).ia({1, 1}).fa({1.0f});
  expect(c, REMAT_OK);
  c.iattrs[1] = 0;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (B) has dims [5, 3]", "K = 3", "trans_a 1"});
}

void matmul_with_wrong_output_dims_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.out_shape(0, {2, 5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (C) has dims [2, 5]", "[M, N] = [2, 4]"});
}

void matmul_with_batch_sizes_that_fit_no_mode_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  c.in(F32, {4, 2, 3}).in(F32, {2, 3, 5}).out(F32, {2, 5}).ia({0, 0}).fa({1.0f});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"batch sizes A 4, B 2, C 1", "no mode"});
  c.in_shape(1, {3, 3, 5}).out_shape(0, {3, 2, 5});  // Batched, but A has 4 entries.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"batch sizes A 4, B 3, C 3"});
}

void matmul_with_trans_flag_2_or_negative_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.iattrs[1] = 2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (trans_b) is 2", "expected 0 or 1"});
  c.iattrs[1] = 0;
  c.iattrs[0] = -1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (trans_a) is -1"});
}

// ---- head_matmul --------------------------------------------------------------------------------

void head_matmul_over_interleaved_and_stacked_heads_is_accepted(void**) {
  Case scores(OpCode::kHeadMatMul);
  head_matmul_ok(scores);
  expect(scores, REMAT_OK);
  Case context(
      OpCode::kHeadMatMul);  // probs [2, 2, 3, 3] times v [2, 3, 2 x 4] into [2, 3, 2 x 4].
  context.in(F32, {2, 2, 3, 3}).in(F32, {2, 3, 8}).out(F32, {2, 3, 8}).ia({0, 0, 2, 6}).fa({1.0f});
  expect(context, REMAT_OK);
  Case dk(OpCode::kHeadMatMul);  // dscores^T q: A stacked and transposed, B and C interleaved.
  dk.in(F32, {4, 3, 3}).in(F32, {2, 3, 8}).out(F32, {2, 3, 8}).ia({1, 0, 2, 6}).fa({0.5f});
  expect(dk, REMAT_OK);
  Case plain(OpCode::kHeadMatMul);  // Nothing interleaved: a batched matmul of 6 products.
  plain.in(F32, {6, 2, 3}).in(F32, {6, 3, 5}).out(F32, {2, 3, 2, 5}).ia({0, 0, 3, 0}).fa({1.0f});
  expect(plain, REMAT_OK);
}

void head_matmul_with_bad_heads_or_layout_bits_is_rejected(void**) {
  Case c(OpCode::kHeadMatMul);
  head_matmul_ok(c);
  c.iattrs[2] = 0;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 2 (heads) is 0", "expected 1 to 16777216"});
  c.iattrs[2] = -2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 2 (heads) is -2"});
  c.iattrs[2] = (int64_t{1} << 24) + 1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 2 (heads) is 16777217"});
  Case most(OpCode::kHeadMatMul);  // 2^24 heads of 1 x 1 matrices: the bound itself is accepted.
  most.in(F32, {1, 1, int64_t{1} << 24})
      .in(F32, {1, 1, int64_t{1} << 24})
      .out(F32, {1, int64_t{1} << 24, 1, 1})
      .ia({0, 1, int64_t{1} << 24, 3})
      .fa({1.0f});
  expect(most, REMAT_OK);
  c.iattrs[2] = 2;
  c.iattrs[3] = 8;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 3 (interleaved) is 8", "expected 0 to 7"});
  c.iattrs[3] = -1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 3 (interleaved) is -1"});
  c.iattrs[3] = 3;
  c.iattrs[0] = 2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (trans_a) is 2", "expected 0 or 1"});
  c.iattrs[0] = 0;
  c.iattrs[1] = -1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (trans_b) is -1"});
}

void head_matmul_with_heads_that_do_not_divide_is_rejected(void**) {
  Case c(OpCode::kHeadMatMul);
  head_matmul_ok(c);
  c.iattrs[2] = 3;  // 8 columns are not 3 heads.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (A) has dims [2, 3, 8]", "not a multiple of heads 3"});
  Case context(OpCode::kHeadMatMul);  // B and C interleaved, 9 columns for 2 heads.
  context.in(F32, {2, 2, 3, 3}).in(F32, {2, 3, 9}).out(F32, {2, 3, 8}).ia({0, 0, 2, 6}).fa({1.0f});
  expect(context, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (B) has dims [2, 3, 9]", "not a multiple of heads 2"});
  context.in_shape(1, {2, 3, 8}).out_shape(0, {2, 3, 9});
  expect(context, REMAT_ERROR_BAD_SHAPE,
         {"output 0 (C) has dims [2, 3, 9]", "not a multiple of heads 2"});
  Case stacked(OpCode::kHeadMatMul);  // All stacked: 3 matrices are not whole heads of 2.
  stacked.in(F32, {3, 2, 4}).in(F32, {3, 4, 2}).out(F32, {3, 2, 2}).ia({0, 0, 2, 0}).fa({1.0f});
  expect(
      stacked, REMAT_ERROR_BAD_SHAPE,
      {"input 0 (A) has dims [3, 2, 4]: per-head matrices A 3, B 3, C 3", "multiple of heads 2"});
}

void head_matmul_with_mismatched_sizes_is_rejected(void**) {
  Case c(OpCode::kHeadMatMul);
  head_matmul_ok(c);
  c.in_shape(1, {2, 4, 8});  // k has 4 rows now: N is 4, C's matrices have 3 columns.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"output 0 (C) has dims [2, 2, 3, 3]", "[M, N] = [3, 4] per head"});
  c.in_shape(1, {2, 3, 6});  // 3 columns a head, against A's 4.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (B) has dims [2, 3, 6]", "expected K = 4", "(trans_b 1)"});
  c.in_shape(1, {3, 3, 8});  // 6 products against A's and C's 4.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (B) has dims [3, 3, 8]: per-head matrices A 4, B 6, C 4"});
  c.in_shape(1, {2, 3, 8}).out_shape(0, {3, 2, 3, 3});  // C 6 products against A's and B's 4.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"output 0 (C) has dims [3, 2, 3, 3]: per-head matrices A 4, B 4, C 6"});
  c.out_shape(0, {2, 2, 3, 3}).in_shape(1, {8});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (B) has dims [8]", "rank 1, expected at least 2"});
  c.in_shape(1, {2, 3, 8}).in_shape(0, {24});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (A) has dims [24]", "rank 1, expected at least 2"});
  c.in_shape(0, {2, 3, 8}).out_shape(0, {36});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (C) has dims [36]", "rank 1, expected at least 2"});
}

void head_matmul_with_nan_alpha_is_rejected(void**) {
  Case c(OpCode::kHeadMatMul);
  head_matmul_ok(c);
  c.fattrs[0] = NAN;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (alpha) is nan"});
}

void matmul_with_nan_alpha_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.fattrs[0] = NAN;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (alpha) is nan"});
}

void matmul_with_a_vector_operand_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.in_shape(0, {3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (A) has dims [3]", "rank 1, expected at least 2"});
}

// The optional bias is N floats, for batched and broadcast products; a weight gradient (reduce
// mode) has none.
void matmul_bias_of_n_elements_is_accepted_and_any_other_is_rejected(void**) {
  Case c(OpCode::kMatMul);
  c.in(F32, {4, 2, 3}).in(F32, {5, 3}).in(F32, {5}).out(F32, {4, 2, 5}).ia({0, 1}).fa({1.0f});
  expect(c, REMAT_OK);
  c.in_shape(2, {4});
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 2 (bias) has dims [4] (4 elements)", "expected N = 5", "output 0 (C)"});
  c.in_shape(2, {1, 5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 2 (bias) has dims [1, 5]: rank 2, expected 1"});
  Case batched(OpCode::kMatMul);
  batched.in(F32, {2, 4, 3})
      .in(F32, {2, 3, 6})
      .in(F32, {6})
      .out(F32, {2, 4, 6})
      .ia({0, 0})
      .fa({1.0f});
  expect(batched, REMAT_OK);
  Case reduce(OpCode::kMatMul);
  reduce.in(F32, {4, 2, 5}).in(F32, {4, 2, 3}).in(F32, {3}).out(F32, {5, 3}).ia({1, 0}).fa({1.0f});
  expect(reduce, REMAT_ERROR_BAD_SHAPE, {"input 2 (bias) in reduce mode"});
}

// ---- bias_add, reduce_leading, elementwise ------------------------------------------------------

void bias_add_with_bias_not_the_trailing_dims_of_x_is_rejected(void**) {
  Case c(OpCode::kBiasAdd);
  bias_add_ok(c);
  c.in_shape(1, {3});
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (b) has dims [3]", "trailing dims of input 0 (x) [2, 3, 4]"});
  c.in_shape(1, {1, 2, 3, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (b) has dims [1, 2, 3, 4]"});
  c.in_shape(1, {2, 3, 4});
  expect(c, REMAT_OK);
}

void bias_add_with_output_of_another_size_is_rejected(void**) {
  Case c(OpCode::kBiasAdd);
  bias_add_ok(c);
  c.out_shape(0, {2, 3, 5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y)", "(30 elements), expected 24 elements"});
}

void reduce_leading_with_output_not_the_trailing_dims_is_rejected(void**) {
  Case c(OpCode::kReduceLeading);
  reduce_leading_ok(c);
  c.out_shape(0, {3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (db) has dims [3]", "trailing dims of input 0 (dy)"});
  c.out_shape(0, {3, 4});
  expect(c, REMAT_OK);
}

void elementwise_ops_with_tensors_of_different_sizes_are_rejected(void**) {
  for (OpCode op : {OpCode::kAdd, OpCode::kMul, OpCode::kReluGrad, OpCode::kGeluGrad,
                    OpCode::kTanhGrad, OpCode::kSigmoidGrad, OpCode::kMseGrad,
                    OpCode::kPowScalarGrad, OpCode::kSquareRootGrad, OpCode::kLeakyReluGrad,
                    OpCode::kErrorFunctionGrad, OpCode::kClipGrad, OpCode::kHardSigmoidGrad}) {
    Case c(op);
    build(c);
    c.in_shape(1, {2, 5});
    expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (", "(10 elements), expected"});
  }
  for (OpCode op : {OpCode::kRelu, OpCode::kGelu, OpCode::kTanh, OpCode::kSigmoid, OpCode::kCopy,
                    OpCode::kScale, OpCode::kDropout, OpCode::kDropoutGrad, OpCode::kMseGrad,
                    OpCode::kPowScalar, OpCode::kSquareRoot, OpCode::kLeakyRelu,
                    OpCode::kErrorFunction, OpCode::kClip, OpCode::kHardSigmoid}) {
    Case c(op);
    build(c);
    c.out_shape(0, {7});
    expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (", "(7 elements), expected"});
  }
}

void elementwise_ops_accept_reshaped_tensors_of_equal_size(void**) {
  Case c(OpCode::kAdd);
  c.in(F32, {2, 3}).in(F32, {6}).out(F32, {3, 1, 2});
  expect(c, REMAT_OK);
}

void softmax_with_rows_of_another_length_is_rejected(void**) {
  Case c(OpCode::kSoftmax);
  unary(c);
  c.out_shape(0, {3, 2});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y) has dims [3, 2]", "expected last dim 3"});
  Case g(OpCode::kSoftmaxGrad);
  binary(g);
  g.in_shape(1, {6});
  expect(g, REMAT_ERROR_BAD_SHAPE, {"input 1 (y) has dims [6]", "expected last dim 3"});
}

void log_softmax_with_rows_of_another_length_is_rejected(void**) {
  Case c(OpCode::kLogSoftmax);
  unary(c);
  c.out_shape(0, {3, 2});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y) has dims [3, 2]", "expected last dim 3"});
  Case g(OpCode::kLogSoftmaxGrad);
  binary(g);
  g.in_shape(1, {6});
  expect(g, REMAT_ERROR_BAD_SHAPE, {"input 1 (y) has dims [6]", "expected last dim 3"});
}

// reduce_sum's axes are counted in its input, broadcast's in its output.
void reduce_sum_and_broadcast_with_bad_axes_or_sizes_are_rejected(void**) {
  Case c(OpCode::kReduceSum);
  reduce_sum_ok(c);  // [2, 3, 4, 5] -> [2, 1, 5] over axes 1..2
  c.iattrs[0] = 4;
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"iattr 0 (axis) is 4, expected 0..3", "input 0 (x) [2, 3, 4, 5]"});
  c.iattrs[0] = -1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (axis) is -1"});
  c.iattrs[0] = 1;
  c.iattrs[1] = 4;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (count) is 4, expected 1..3", "from axis 1"});
  c.iattrs[1] = 0;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (count) is 0"});
  c.iattrs[1] = 2;
  c.iattrs[2] = 2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 2 (mean) is 2, expected 0 or 1"});
  c.iattrs[2] = 1;
  c.out_shape(0, {2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y)", "expected the product of the other axes = 10"});
  c.out_shape(0, {10});
  expect(c, REMAT_OK);
  Case b(OpCode::kBroadcast);
  broadcast_ok(b);  // [2, 5] -> [2, 3, 4, 5] over axes 1..2
  b.iattrs[1] = 1;
  expect(
      b, REMAT_ERROR_BAD_SHAPE,
      {"input 0 (x)", "expected the product of the other axes = 40", "output 0 (y) [2, 3, 4, 5]"});
  b.iattrs[1] = 4;
  expect(b, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (count) is 4, expected 1..3"});
}

void scale_with_infinite_alpha_is_rejected(void**) {
  Case c(OpCode::kScale);
  scale_ok(c);
  c.fattrs[0] = -INFINITY;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (alpha) is -inf"});
}

void allreduce_of_other_than_float32_or_a_bad_bucket_is_rejected(void**) {
  for (OpCode op : {OpCode::kAllreduceStart, OpCode::kAllreduceWait}) {
    Case good(op);
    build(good);
    expect(good, REMAT_OK);
    Case eight(op);  // The most inputs an op takes.
    for (int i = 0; i < 8; ++i) eight.in(F32, {5});
    eight.ia({0});
    expect(eight, REMAT_OK);
    Case half(op);
    build(half);
    half.inputs[1].dtype = BF16;
    expect(half, REMAT_ERROR_BAD_DTYPE, {"input 1 (g1) has dtype bf16, expected f32"});
    Case negative(op);
    build(negative);
    negative.iattrs[0] = -1;
    expect(negative, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (bucket) is -1, expected in [0, 1048576]"});
    Case large(op);
    build(large);
    large.iattrs[0] = (int64_t{1} << 20) + 1;
    expect(large, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (bucket) is 1048577"});
    Case none(op);
    none.ia({0});
    expect(none, REMAT_ERROR_BAD_ARITY);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matmul_in_batched_broadcast_and_reduce_modes_is_accepted),
      cmocka_unit_test(matmul_with_mismatched_inner_dims_is_rejected),
      cmocka_unit_test(matmul_with_transposed_operands_contracts_the_transposed_dims),
      cmocka_unit_test(matmul_with_wrong_output_dims_is_rejected),
      cmocka_unit_test(matmul_with_batch_sizes_that_fit_no_mode_is_rejected),
      cmocka_unit_test(matmul_with_trans_flag_2_or_negative_is_rejected),
      cmocka_unit_test(matmul_with_nan_alpha_is_rejected),
      cmocka_unit_test(head_matmul_over_interleaved_and_stacked_heads_is_accepted),
      cmocka_unit_test(head_matmul_with_bad_heads_or_layout_bits_is_rejected),
      cmocka_unit_test(head_matmul_with_heads_that_do_not_divide_is_rejected),
      cmocka_unit_test(head_matmul_with_mismatched_sizes_is_rejected),
      cmocka_unit_test(head_matmul_with_nan_alpha_is_rejected),
      cmocka_unit_test(matmul_with_a_vector_operand_is_rejected),
      cmocka_unit_test(matmul_bias_of_n_elements_is_accepted_and_any_other_is_rejected),
      cmocka_unit_test(bias_add_with_bias_not_the_trailing_dims_of_x_is_rejected),
      cmocka_unit_test(bias_add_with_output_of_another_size_is_rejected),
      cmocka_unit_test(reduce_leading_with_output_not_the_trailing_dims_is_rejected),
      cmocka_unit_test(elementwise_ops_with_tensors_of_different_sizes_are_rejected),
      cmocka_unit_test(elementwise_ops_accept_reshaped_tensors_of_equal_size),
      cmocka_unit_test(softmax_with_rows_of_another_length_is_rejected),
      cmocka_unit_test(log_softmax_with_rows_of_another_length_is_rejected),
      cmocka_unit_test(reduce_sum_and_broadcast_with_bad_axes_or_sizes_are_rejected),
      cmocka_unit_test(scale_with_infinite_alpha_is_rejected),
      cmocka_unit_test(allreduce_of_other_than_float32_or_a_bad_bucket_is_rejected),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
