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

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_listed_ops_are_checked_as_always),
      cmocka_unit_test(another_op_is_refused_naming_it),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
