// Per-op validation (plan/op_check.h) of the layer ops: layernorm, dropout, embedding,
// permute and select, the losses, the optimizers, and the copies between regions.
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

// ---- layernorm ----------------------------------------------------------------------------------

void layernorm_with_gamma_or_beta_not_of_the_last_dim_is_rejected(void**) {
  Case c(OpCode::kLayerNorm);
  layernorm_ok(c);
  c.in_shape(1, {3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (gamma) has dims [3]", "expected N = 4"});
  c.in_shape(1, {4}).in_shape(2, {5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 2 (beta) has dims [5]", "expected N = 4"});
}

void layernorm_with_mean_or_rstd_not_one_per_row_is_rejected(void**) {
  Case c(OpCode::kLayerNorm);
  layernorm_ok(c);
  c.out_shape(1, {5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 1 (mean) has dims [5]", "expected rows = 6"});
  c.out_shape(1, {6}).out_shape(2, {2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 2 (rstd) has dims [2, 4]", "expected rows = 6"});
}

void layernorm_with_output_rows_of_another_length_is_rejected(void**) {
  Case c(OpCode::kLayerNorm);
  layernorm_ok(c);
  c.out_shape(0, {2, 4, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y) has dims [2, 4, 3]", "expected last dim 4"});
}

void layernorm_with_zero_or_negative_eps_is_rejected(void**) {
  Case c(OpCode::kLayerNorm);
  layernorm_ok(c);
  c.fattrs[0] = 0.0f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (eps) is 0", "expected > 0"});
  c.fattrs[0] = -1e-5f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (eps) is -1e-05"});
}

void layernorm_grad_with_mismatched_statistics_or_gradients_is_rejected(void**) {
  Case c(OpCode::kLayerNormGrad);
  layernorm_grad_ok(c);
  c.in_shape(3, {5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 3 (rstd) has dims [5]", "rows = 6"});
  Case d(OpCode::kLayerNormGrad);
  layernorm_grad_ok(d);
  d.out_shape(1, {5});
  expect(d, REMAT_ERROR_BAD_SHAPE, {"output 1 (dgamma) has dims [5]", "N = 4"});
  Case e(OpCode::kLayerNormGrad);
  layernorm_grad_ok(e);
  e.in_shape(0, {2, 3, 5});
  expect(e, REMAT_ERROR_BAD_SHAPE, {"input 0 (dy) has dims [2, 3, 5]", "as input 1 (x)"});
}

// ---- dropout ------------------------------------------------------------------------------------

void dropout_with_p_of_one_or_negative_is_rejected(void**) {
  for (OpCode op : {OpCode::kDropout, OpCode::kDropoutGrad}) {
    Case c(op);
    dropout_ok(c);
    c.fattrs[0] = 1.0f;
    expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (p) is 1", "expected in [0, 1)"});
    c.fattrs[0] = -0.25f;
    expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (p) is -0.25"});
    c.fattrs[0] = 0.0f;
    expect(c, REMAT_OK);
  }
}

void dropout_with_negative_key_is_rejected(void**) {
  for (OpCode op : {OpCode::kDropout, OpCode::kDropoutGrad}) {
    Case c(op);
    dropout_ok(c);
    c.iattrs[0] = -1;
    expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (key) is -1", "expected >= 0"});
  }
}

// ---- embedding ----------------------------------------------------------------------------------

void embedding_with_a_table_not_of_rank_2_is_rejected(void**) {
  Case c(OpCode::kEmbedding);
  embedding_ok(c);
  c.in_shape(1, {11, 8, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (table) has dims [11, 8, 1]", "rank 3, expected 2"});
}

void embedding_with_output_rows_not_of_width_h_is_rejected(void**) {
  Case c(OpCode::kEmbedding);
  embedding_ok(c);
  c.out_shape(0, {2, 5, 7});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (out) has dims [2, 5, 7]", "last dim H = 8"});
}

void embedding_with_output_rows_not_one_per_id_is_rejected(void**) {
  Case c(OpCode::kEmbedding);
  embedding_ok(c);
  c.out_shape(0, {2, 4, 8});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (out) has dims [2, 4, 8]", "per id", "10 rows"});
  c.out_shape(0, {10, 8});
  expect(c, REMAT_OK);
}

void embedding_with_float_ids_or_an_integer_table_is_rejected(void**) {
  Case c(OpCode::kEmbedding);
  embedding_ok(c);
  c.inputs[0].dtype = F32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 0 (ids) has dtype f32", "expected i32"});
  c.inputs[0].dtype = I32;
  c.inputs[1].dtype = I32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 1 (table) has dtype i32", "expected f32"});
}

void embedding_grad_with_mismatched_width_or_ids_is_rejected(void**) {
  Case c(OpCode::kEmbeddingGrad);
  embedding_grad_ok(c);
  c.out_shape(0, {11, 7});
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 0 (dy) has dims [2, 5, 8]", "H = 7", "output 0 (dtable)"});
  c.out_shape(0, {11, 8, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (dtable)", "rank 3, expected 2"});
  c.out_shape(0, {11, 8}).in_shape(1, {2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"per id of input 1 (ids) [2, 4]"});
  c.in_shape(1, {2, 5});
  c.inputs[1].dtype = F32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 1 (ids) has dtype f32"});
}

// ---- permute, copy, select ---------------------------------------------------------------------

void permute_of_six_dims_is_accepted(void**) {
  Case c(OpCode::kPermute);
  c.in(F32, {24, 5}).out(F32, {120}).ia({6, 2, 1, 3, 1, 4, 5, 5, 4, 3, 2, 1, 0});
  expect(c, REMAT_OK);
}

void permute_with_a_repeated_or_out_of_range_axis_is_rejected(void**) {
  Case c(OpCode::kPermute);
  permute_ok(c);
  c.ia({3, 2, 3, 4, 0, 0, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 5 (p_1) is 0", "permutation of 0..2"});
  c.ia({3, 2, 3, 4, 0, 1, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 6 (p_2) is 3"});
  c.ia({3, 2, 3, 4, -1, 1, 2});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 4 (p_0) is -1"});
}

void permute_with_view_dims_not_of_x_and_y_size_is_rejected(void**) {
  Case c(OpCode::kPermute);
  permute_ok(c);
  c.ia({3, 2, 3, 5, 2, 0, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (x)", "expected 30 elements"});
  c.ia({3, 2, 3, 4, 2, 0, 1}).out_shape(0, {25});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y) has dims [25]", "expected 24 elements"});
}

void permute_with_zero_or_overflowing_view_dims_is_rejected(void**) {
  Case c(OpCode::kPermute);
  permute_ok(c);
  c.ia({3, 2, 0, 4, 2, 0, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 2 (d_1) is 0", "expected >= 1"});
  c.ia({3, k2p32, k2p32, 4, 2, 0, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"more than 2^40"});
}

void permute_with_an_attribute_count_other_than_1_plus_2r_is_rejected(void**) {
  Case c(OpCode::kPermute);
  permute_ok(c);
  c.ia({3, 2, 3, 4, 2, 0});
  expect(c, REMAT_ERROR_BAD_ARITY, {"6 iattrs", "1 + 2r = 7"});
  c.ia({});
  expect(c, REMAT_ERROR_BAD_ARITY, {"0 iattrs"});
}

void permute_of_rank_0_or_rank_7_is_rejected(void**) {
  Case c(OpCode::kPermute);
  permute_ok(c);
  c.ia({0});
  expect(c, REMAT_ERROR_BAD_ARITY, {"iattr 0 (r) is 0", "expected 1..6"});
  c.ia({7, 1, 1, 1, 1, 1, 1, 24, 0, 1, 2, 3, 4, 5, 6});
  expect(c, REMAT_ERROR_BAD_ARITY, {"iattr 0 (r) is 7"});
  c.ia({INT64_MIN, 0, 0});
  expect(c, REMAT_ERROR_BAD_ARITY, {"iattr 0 (r) is -9223372036854775808"});
}

void select_with_axis_out_of_range_is_rejected(void**) {
  Case c(OpCode::kSelect);
  select_ok(c);
  c.ia({3, 0});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (axis) is 3", "expected 0..2", "input 0 (x)"});
  c.ia({-1, 0});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (axis) is -1"});
}

void select_with_index_out_of_range_is_rejected(void**) {
  Case c(OpCode::kSelect);
  select_ok(c);
  c.ia({1, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (index) is 3", "expected 0..2", "axis 1"});
  c.ia({1, -1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (index) is -1"});
}

void select_with_output_of_another_size_is_rejected(void**) {
  Case c(OpCode::kSelect);
  select_ok(c);
  c.out_shape(0, {2, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (y) has dims [2, 3]", "= 8"});
}

void select_grad_checks_axis_and_index_against_its_output(void**) {
  Case c(OpCode::kSelectGrad);
  select_grad_ok(c);
  c.ia({3, 0});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (axis) is 3", "output 0 (dx) [2, 3, 4]"});
  c.ia({2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (index) is 4", "expected 0..3"});
  c.ia({2, 0});  // Selecting along the last axis leaves [2, 3]: dy [2, 4] is the wrong size.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (dy) has dims [2, 4]", "= 6"});
}

// ---- losses -------------------------------------------------------------------------------------

void softmax_cross_entropy_with_logits_not_of_rank_2_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  softmax_cross_entropy_ok(c);
  c.in_shape(0, {4, 3, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (logits) has dims [4, 3, 1]", "rank 3, expected 2"});
}

void softmax_cross_entropy_with_labels_not_one_per_row_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  softmax_cross_entropy_ok(c);
  c.in_shape(1, {5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (labels) has dims [5]", "expected N = 4"});
  c.in_shape(1, {4});
  c.inputs[1].dtype = F32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 1 (labels) has dtype f32", "expected i32"});
}

void softmax_cross_entropy_with_a_loss_of_two_elements_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  softmax_cross_entropy_ok(c);
  c.out_shape(0, {2});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (loss) has dims [2]", "expected 1 element"});
  c.out_shape(0, {1, 1});
  expect(c, REMAT_OK);
}

void softmax_cross_entropy_with_probs_unlike_logits_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  softmax_cross_entropy_ok(c);
  c.out_shape(1, {3, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 1 (probs) has dims [3, 4]", "last dim 3"});
}

void softmax_cross_entropy_grad_with_mismatched_shapes_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropyGrad);
  softmax_cross_entropy_grad_ok(c);
  c.in_shape(0, {12});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (probs) has dims [12]", "expected 2"});
  c.in_shape(0, {4, 3}).in_shape(1, {3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (labels) has dims [3]", "N = 4"});
  c.in_shape(1, {4}).out_shape(0, {4, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (dlogits) has dims [4, 4]"});
}

void mse_with_mismatched_target_or_loss_is_rejected(void**) {
  Case c(OpCode::kMse);
  mse_ok(c);
  c.in_shape(1, {4, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (target) has dims [4, 3]", "expected 8 elements"});
  c.in_shape(1, {8}).out_shape(0, {4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (loss) has dims [4]", "expected 1 element"});
  c.out_shape(0, {1});
  c.inputs[1].dtype = I32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 1 (target) has dtype i32", "expected f32"});
}

// ---- optimizers ---------------------------------------------------------------------------------

void sgd_without_momentum_takes_no_velocity(void**) {
  Case c(OpCode::kSgdUpdate);
  c.in(F32, {3, 4}).in(F32, {12}).out(F32, {3, 4}).fa({0.1f, 0.0f, 1e-4f});
  expect(c, REMAT_OK);
  c.in(F32, {3, 4}).out(F32, {3, 4});
  expect(c, REMAT_ERROR_BAD_ARITY, {"fattr 1 (momentum) is 0", "takes no velocity"});
}

void sgd_with_momentum_but_no_velocity_is_rejected(void**) {
  Case c(OpCode::kSgdUpdate);
  sgd_update_ok(c);
  c.num_in = 2;
  c.num_out = 1;
  expect(c, REMAT_ERROR_BAD_ARITY, {"fattr 1 (momentum) is 0.9", "needs input 2 and output 1"});
}

void sgd_with_infinite_lr_or_nan_weight_decay_is_rejected(void**) {
  Case c(OpCode::kSgdUpdate);
  sgd_update_ok(c);
  c.fattrs[0] = INFINITY;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (lr) is inf"});
  c.fattrs[0] = 0.01f;
  c.fattrs[2] = NAN;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 2 (weight_decay) is nan"});
}

void sgd_with_mismatched_param_grad_or_velocity_is_rejected(void**) {
  Case c(OpCode::kSgdUpdate);
  sgd_update_ok(c);
  c.in_shape(1, {13});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (grad) has dims [13]", "expected 12 elements"});
  c.in_shape(1, {3, 4}).in_shape(2, {2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 2 (velocity) has dims [2, 4]"});
  c.in_shape(2, {3, 4}).out_shape(0, {4, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (param) has dims [4, 3]", "expected [3, 4]"});
  c.out_shape(0, {3, 4}).out_shape(1, {12});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 1 (velocity) has dims [12]", "expected [3, 4]"});
}

void adam_and_adamw_are_accepted_and_decoupled_2_is_rejected(void**) {
  Case c(OpCode::kAdamUpdate);
  adam_update_ok(c);
  c.iattrs[0] = 1;
  expect(c, REMAT_OK);
  c.iattrs[0] = 2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (decoupled) is 2", "expected 0 or 1"});
}

void adam_with_betas_outside_0_1_or_nonpositive_eps_is_rejected(void**) {
  Case c(OpCode::kAdamUpdate);
  adam_update_ok(c);
  c.fattrs[1] = 1.0f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 1 (b1) is 1", "expected in [0, 1)"});
  c.fattrs[1] = 0.9f;
  c.fattrs[2] = -0.1f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 2 (b2) is -0.1"});
  c.fattrs[2] = 0.0f;
  c.fattrs[3] = 0.0f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 3 (eps) is 0", "expected > 0"});
  c.fattrs[3] = 1e-8f;
  c.fattrs[0] = NAN;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (lr) is nan"});
}

void adam_with_mismatched_moments_is_rejected(void**) {
  Case c(OpCode::kAdamUpdate);
  adam_update_ok(c);
  c.in_shape(2, {11});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 2 (m) has dims [11]", "expected 12 elements"});
  c.in_shape(2, {12}).out_shape(1, {3, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"output 1 (m) has dims [3, 4]", "expected [12] as input 2 (m)"});
  c.out_shape(1, {12}).out_shape(2, {4, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 2 (v) has dims [4, 3]"});
}

// ---- copies between regions --------------------------------------------------------------------

void spill_and_prefetch_move_any_dtype_unchanged(void**) {
  for (OpCode op : {OpCode::kSpill, OpCode::kPrefetch}) {
    for (uint8_t dtype : {F32, F16, BF16, I32}) {
      Case c(op);
      c.in(dtype, {2, 3}).out(dtype, {6});
      expect(c, REMAT_OK);
    }
  }
}

void spill_that_changes_dtype_or_size_is_rejected(void**) {
  for (OpCode op : {OpCode::kSpill, OpCode::kPrefetch}) {
    Case c(op);
    c.in(I32, {2, 3}).out(F32, {2, 3});
    expect(c, REMAT_ERROR_BAD_DTYPE, {"output 0 (", "has dtype f32, expected i32"});
    c.outputs[0].dtype = I32;
    c.out_shape(0, {2, 4});
    expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (", "(8 elements), expected 6 elements"});
    c.inputs[0].dtype = I64 + 1;  // The first value past the dtypes remat.h names.
    expect(c, REMAT_ERROR_BAD_DTYPE, {"input 0 (", "dtype unknown (5)"});
  }
}

void wait_takes_one_tensor_of_any_dtype_and_no_output(void**) {
  Case c(OpCode::kWait);
  c.in(BF16, {2, 3});
  expect(c, REMAT_OK);
  c.out(BF16, {2, 3});
  expect(c, REMAT_ERROR_BAD_ARITY, {"1 outputs, expected 0"});
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layernorm_with_gamma_or_beta_not_of_the_last_dim_is_rejected),
      cmocka_unit_test(layernorm_with_mean_or_rstd_not_one_per_row_is_rejected),
      cmocka_unit_test(layernorm_with_output_rows_of_another_length_is_rejected),
      cmocka_unit_test(layernorm_with_zero_or_negative_eps_is_rejected),
      cmocka_unit_test(layernorm_grad_with_mismatched_statistics_or_gradients_is_rejected),
      cmocka_unit_test(dropout_with_p_of_one_or_negative_is_rejected),
      cmocka_unit_test(dropout_with_negative_key_is_rejected),
      cmocka_unit_test(embedding_with_a_table_not_of_rank_2_is_rejected),
      cmocka_unit_test(embedding_with_output_rows_not_of_width_h_is_rejected),
      cmocka_unit_test(embedding_with_output_rows_not_one_per_id_is_rejected),
      cmocka_unit_test(embedding_with_float_ids_or_an_integer_table_is_rejected),
      cmocka_unit_test(embedding_grad_with_mismatched_width_or_ids_is_rejected),
      cmocka_unit_test(permute_of_six_dims_is_accepted),
      cmocka_unit_test(permute_with_a_repeated_or_out_of_range_axis_is_rejected),
      cmocka_unit_test(permute_with_view_dims_not_of_x_and_y_size_is_rejected),
      cmocka_unit_test(permute_with_zero_or_overflowing_view_dims_is_rejected),
      cmocka_unit_test(permute_with_an_attribute_count_other_than_1_plus_2r_is_rejected),
      cmocka_unit_test(permute_of_rank_0_or_rank_7_is_rejected),
      cmocka_unit_test(select_with_axis_out_of_range_is_rejected),
      cmocka_unit_test(select_with_index_out_of_range_is_rejected),
      cmocka_unit_test(select_with_output_of_another_size_is_rejected),
      cmocka_unit_test(select_grad_checks_axis_and_index_against_its_output),
      cmocka_unit_test(softmax_cross_entropy_with_logits_not_of_rank_2_is_rejected),
      cmocka_unit_test(softmax_cross_entropy_with_labels_not_one_per_row_is_rejected),
      cmocka_unit_test(softmax_cross_entropy_with_a_loss_of_two_elements_is_rejected),
      cmocka_unit_test(softmax_cross_entropy_with_probs_unlike_logits_is_rejected),
      cmocka_unit_test(softmax_cross_entropy_grad_with_mismatched_shapes_is_rejected),
      cmocka_unit_test(mse_with_mismatched_target_or_loss_is_rejected),
      cmocka_unit_test(sgd_without_momentum_takes_no_velocity),
      cmocka_unit_test(sgd_with_momentum_but_no_velocity_is_rejected),
      cmocka_unit_test(sgd_with_infinite_lr_or_nan_weight_decay_is_rejected),
      cmocka_unit_test(sgd_with_mismatched_param_grad_or_velocity_is_rejected),
      cmocka_unit_test(adam_and_adamw_are_accepted_and_decoupled_2_is_rejected),
      cmocka_unit_test(adam_with_betas_outside_0_1_or_nonpositive_eps_is_rejected),
      cmocka_unit_test(adam_with_mismatched_moments_is_rejected),
      cmocka_unit_test(spill_and_prefetch_move_any_dtype_unchanged),
      cmocka_unit_test(spill_that_changes_dtype_or_size_is_rejected),
      cmocka_unit_test(wait_takes_one_tensor_of_any_dtype_and_no_output),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
