// A build that carries only some ops (plan/op_subset.h), as a firmware build of one plan does:
// this test's verifier is compiled with tests/plan/op_subset_fixture.h's list (matmul and
// relu). Those are checked as always; any other op is refused, naming it, however well formed.
#include "op_check_cases.h"
#include "plan/op_subset.h"
#include "tests/cmocka_cpp.h"

namespace {

using remat::OpCode;

void the_listed_ops_are_checked_as_always(void**) {
  static_assert(remat::op_in_build(static_cast<uint16_t>(OpCode::kMatMul)), "matmul is listed");
  for (OpCode op : {OpCode::kMatMul, OpCode::kRelu}) {
    Case c(op);
    build(c);
    expect(c, REMAT_OK);
  }
}

void another_op_is_refused_naming_it(void**) {
  static_assert(!remat::op_in_build(static_cast<uint16_t>(OpCode::kConv)), "conv is not");
  for (OpCode op : {OpCode::kConv, OpCode::kAdd, OpCode::kMaxPool}) {
    Case c(op);
    build(c);
    expect(c, REMAT_ERROR_UNIMPLEMENTED, {"not in this build"});
  }
}

// The op table keeps the tensor and attribute names of the listed ops alone (plan/ops.h); an op
// left out keeps its own name, for the refusal.
void the_op_table_names_the_listed_ops_alone(void**) {
  const remat::OpInfo* matmul = remat::op_info(static_cast<uint16_t>(OpCode::kMatMul));
  assert_string_equal(matmul->input_names[2], "bias");
  assert_string_equal(matmul->output_names[0], "C");
  assert_string_equal(matmul->iattr_names[1], "trans_b");
  assert_string_equal(matmul->fattr_names[0], "alpha");
  const remat::OpInfo* relu = remat::op_info(static_cast<uint16_t>(OpCode::kRelu));
  assert_string_equal(relu->input_names[0], "x");
  assert_string_equal(relu->output_names[0], "y");
  const remat::OpInfo* conv = remat::op_info(static_cast<uint16_t>(OpCode::kConv));
  assert_string_equal(conv->name, "conv");
  assert_int_equal(conv->max_inputs, 3);
  assert_null(conv->input_names[0]);
  assert_null(conv->iattr_names[0]);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_listed_ops_are_checked_as_always),
      cmocka_unit_test(another_op_is_refused_naming_it),
      cmocka_unit_test(the_op_table_names_the_listed_ops_alone),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
