// Per-op validation (plan/op_check.h) of fused attention: attention and attention_grad.
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

void attention_with_and_without_masks_is_accepted(void**) {
  Case shared(OpCode::kAttention);  // attention_ok: a mask [Sq, Sk].
  attention_ok(shared);
  expect(shared, REMAT_OK);
  Case per_batch(OpCode::kAttention);
  attention_ok(per_batch);
  per_batch.in_shape(3, {2, 3, 5});
  expect(per_batch, REMAT_OK);
  Case bare(OpCode::kAttention);  // No mask, one head, one query, one key.
  bare.in(F32, {1, 1, 4}).in(F32, {1, 1, 4}).in(F32, {1, 1, 2});
  bare.out(F32, {1, 1, 2}).out(F32, {1, 1, 1}).ia({1, 0}).fa({1.0f, 0.0f});
  expect(bare, REMAT_OK);
  Case grad(OpCode::kAttentionGrad);
  attention_grad_ok(grad);
  expect(grad, REMAT_OK);
  grad.num_in = 6;  // Without its mask.
  expect(grad, REMAT_OK);
}

void attention_with_bad_attributes_is_rejected(void**) {
  Case c(OpCode::kAttention);
  attention_ok(c);
  c.iattrs[0] = 0;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (heads) is 0", "expected 1 to 16777216"});
  c.iattrs[0] = (int64_t{1} << 24) + 1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (heads) is 16777217"});
  c.iattrs[0] = 2;
  c.iattrs[1] = -1;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 1 (key) is -1", "expected >= 0"});
  c.iattrs[1] = 7;
  c.fattrs[1] = 1.0f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 1 (p) is 1"});
  c.fattrs[1] = -0.5f;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 1 (p) is -0.5"});
  Case grad(OpCode::kAttentionGrad);
  attention_grad_ok(grad);
  grad.iattrs[0] = -3;
  expect(grad, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (heads) is -3"});
}

void attention_with_heads_that_do_not_divide_is_rejected(void**) {
  Case c(OpCode::kAttention);
  attention_ok(c);
  c.iattrs[0] = 3;  // 8 columns of q are not 3 heads.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 0 (q) has dims [2, 3, 8]", "last dim 8 is not a positive multiple of heads 3"});
  Case v(OpCode::kAttention);
  attention_ok(v);
  v.in_shape(2, {2, 5, 5}).out_shape(0, {2, 3, 5});
  expect(v, REMAT_ERROR_BAD_SHAPE, {"input 2 (v) has dims [2, 5, 5]", "multiple of heads 2"});
}

void attention_with_mismatched_sizes_is_rejected(void**) {
  Case c(OpCode::kAttention);
  attention_ok(c);
  c.in_shape(1, {2, 5, 6});  // k's heads 3 wide against q's 4.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 1 (k) has dims [2, 5, 6]", "expected [B, Sk, heads * D] = [2, 5, 8]",
          "from input 0 (q) [2, 3, 8]"});
  c.in_shape(1, {3, 5, 8});  // Another batch.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (k) has dims [3, 5, 8]", "= [2, 5, 8]"});
  c.in_shape(1, {2, 5, 8}).in_shape(2, {2, 4, 6});  // v's keys 4 against k's 5.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 2 (v) has dims [2, 4, 6]", "expected [B, Sk, heads * Dv] = [2, 5, 6]"});
  c.in_shape(2, {2, 5, 6}).in_shape(0, {2, 3, 2, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (q) has dims [2, 3, 2, 4]: rank 4, expected 3"});
  c.in_shape(0, {2, 3, 8}).out_shape(0, {2, 3, 8});  // context as wide as q, not v.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"output 0 (context) has dims [2, 3, 8]", "expected [B, Sq, heads * Dv] = [2, 3, 6]"});
  c.out_shape(0, {2, 3, 6}).out_shape(1, {2, 3, 2});  // lse [B, Sq, heads], not [B, heads, Sq].
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"output 1 (lse) has dims [2, 3, 2]", "expected [B, heads, Sq] = [2, 2, 3]"});
}

void attention_over_an_empty_sequence_is_rejected(void**) {
  Case c(OpCode::kAttention);
  attention_ok(c);
  c.in_shape(0, {2, 0, 8}).out_shape(0, {2, 0, 6}).out_shape(1, {2, 2, 0});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (q) has dims [2, 0, 8]: dim 1 is 0, expected >= 1"});
  Case k(OpCode::kAttention);
  attention_ok(k);
  k.in_shape(1, {2, 0, 8}).in_shape(2, {2, 0, 6}).in_shape(3, {3, 0});
  expect(k, REMAT_ERROR_BAD_SHAPE, {"input 1 (k) has dims [2, 0, 8]: dim 1 is 0, expected >= 1"});
}

void attention_with_a_mask_of_another_shape_is_rejected(void**) {
  Case c(OpCode::kAttention);
  attention_ok(c);
  c.in_shape(3, {5, 3});  // [Sk, Sq]: transposed.
  expect(
      c, REMAT_ERROR_BAD_SHAPE,
      {"input 3 (mask) has dims [5, 3]", "expected [Sq, Sk] = [3, 5] or [B, Sq, Sk] = [2, 3, 5]"});
  c.in_shape(3, {2, 2, 3, 5});  // One mask per head is not a shape the op takes.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 3 (mask) has dims [2, 2, 3, 5]"});
  c.in_shape(3, {1, 3, 5});  // A batch of one against B = 2.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 3 (mask) has dims [1, 3, 5]"});
  Case grad(OpCode::kAttentionGrad);
  attention_grad_ok(grad);
  grad.in_shape(6, {3, 4});
  expect(grad, REMAT_ERROR_BAD_SHAPE, {"input 6 (mask) has dims [3, 4]"});
}

void attention_grad_with_mismatched_tensors_is_rejected(void**) {
  Case c(OpCode::kAttentionGrad);
  attention_grad_ok(c);
  c.in_shape(0, {2, 3, 8});  // dcontext as wide as q.
  expect(c, REMAT_ERROR_BAD_SHAPE,
         {"input 0 (dcontext) has dims [2, 3, 8]", "expected [B, Sq, heads * Dv] = [2, 3, 6]",
          "from input 3 (v) [2, 5, 6]"});
  c.in_shape(0, {2, 3, 6}).in_shape(4, {2, 5, 6});  // context over the keys.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 4 (context) has dims [2, 5, 6]"});
  c.in_shape(4, {2, 3, 6}).in_shape(5, {2, 3});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 5 (lse) has dims [2, 3]: rank 2, expected 3"});
  c.in_shape(5, {2, 2, 3}).out_shape(1, {2, 5, 6});  // dk shaped as v.
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 1 (dk) has dims [2, 5, 6]"});
  c.out_shape(1, {2, 5, 8}).out_shape(2, {2, 5, 8});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 2 (dv) has dims [2, 5, 8]"});
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(attention_with_and_without_masks_is_accepted),
      cmocka_unit_test(attention_with_bad_attributes_is_rejected),
      cmocka_unit_test(attention_with_heads_that_do_not_divide_is_rejected),
      cmocka_unit_test(attention_with_mismatched_sizes_is_rejected),
      cmocka_unit_test(attention_over_an_empty_sequence_is_rejected),
      cmocka_unit_test(attention_with_a_mask_of_another_shape_is_rejected),
      cmocka_unit_test(attention_grad_with_mismatched_tensors_is_rejected),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
