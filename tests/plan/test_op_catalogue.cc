// The op table made from the catalogue (plan/op_catalogue.h, plan/ops.h): opcodes 1..N each
// have an entry whose name is unique and finds it again, whose arity agrees with its tensor
// names, and whose attribute counts agree with its attribute names; anything else has none.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include <string.h>

#include "plan/op_attrs.h"
#include "plan/ops.h"

using remat::kOpCodeCount;
using remat::op_by_name;
using remat::op_info;
using remat::OpCode;
using remat::OpInfo;

namespace {

// Whether the first |count| names of an OpInfo list are names (the lists are packed, so what
// follows is the next list's).
bool all_named(const char* const* names, int count) {
  for (int i = 0; i < count; ++i) {
    if (names[i] == nullptr || names[i][0] == '\0') return false;
  }
  return true;
}

void every_opcode_has_an_entry_and_nothing_else_has_one(void**) {
  assert_null(op_info(0));
  assert_null(op_info(kOpCodeCount));
  assert_null(op_info(0xffff));
  assert_string_equal(remat::op_name(kOpCodeCount), "unknown");
  for (uint16_t code = 1; code < kOpCodeCount; ++code) {
    const OpInfo* info = op_info(code);
    assert_non_null(info);
    assert_non_null(info->name);
    assert_true(strlen(info->name) > 0);
  }
  // Opcodes are stored in plans: these values never change.
  assert_int_equal(static_cast<int>(OpCode::kMatMul), 1);
  assert_int_equal(static_cast<int>(OpCode::kAdamUpdate), 31);
  assert_int_equal(static_cast<int>(OpCode::kScale), 35);
}

void names_are_unique_and_find_their_op(void**) {
  for (uint16_t code = 1; code < kOpCodeCount; ++code) {
    const char* name = op_info(code)->name;
    assert_int_equal(static_cast<int>(op_by_name(name)), code);
    for (uint16_t other = 1; other < code; ++other) {
      if (strcmp(op_info(other)->name, name) == 0)
        fail_msg("ops %u and %u are both '%s'", other, code, name);
    }
  }
  assert_int_equal(static_cast<int>(op_by_name("no_such_op")), 0);
  assert_int_equal(static_cast<int>(op_by_name("")), 0);
}

void arities_agree_with_the_names_of_tensors_and_attributes(void**) {
  for (uint16_t code = 1; code < kOpCodeCount; ++code) {
    const OpInfo& info = *op_info(code);
    if (!all_named(info.input_names, info.max_inputs)) fail_msg("%s: input names", info.name);
    if (!all_named(info.output_names, info.max_outputs)) fail_msg("%s: output names", info.name);
    assert_true(info.min_inputs <= info.max_inputs && info.max_inputs <= remat::kMaxOpInputs);
    assert_true(info.min_outputs <= info.max_outputs && info.max_outputs <= remat::kMaxOpOutputs);
    // Every op reads something, but fill (a loss gradient's seed).
    assert_true(info.max_inputs >= 1 || code == static_cast<int>(OpCode::kFill));
    if (!all_named(info.fattr_names, info.num_fattrs)) fail_msg("%s: fattr names", info.name);
    if (info.num_iattrs == remat::kVariableAttrs) {
      assert_int_equal(code, static_cast<int>(OpCode::kPermute));  // The one variable list.
    } else if (!all_named(info.iattr_names, info.num_iattrs)) {
      fail_msg("%s: iattr names", info.name);
    }
  }
  const OpInfo& matmul = *op_info(static_cast<uint16_t>(OpCode::kMatMul));
  assert_string_equal(matmul.name, "matmul");
  assert_string_equal(matmul.input_names[1], "B");
  assert_string_equal(matmul.iattr_names[1], "trans_b");
  assert_string_equal(matmul.fattr_names[0], "alpha");
  assert_string_equal(matmul.input_names[2], "bias");  // Packed: each list where it belongs.
  assert_string_equal(matmul.output_names[0], "C");
  assert_string_equal(matmul.iattr_names[0], "trans_a");
  const OpInfo& sgd = *op_info(static_cast<uint16_t>(OpCode::kSgdUpdate));
  assert_int_equal(sgd.min_inputs, 2);
  assert_int_equal(sgd.max_inputs, 3);
  assert_int_equal(sgd.min_outputs, 1);
  assert_int_equal(sgd.max_outputs, 2);
}

// attr::OP::NAME (plan/op_attrs.h) is the attribute the op table names at its index, for
// every named attribute of the catalogue, and carries the catalogue's default.
void named_attributes_find_their_index_and_default(void**) {
  int checked = 0;
  auto expect = [&checked](OpCode code, bool is_int, uint32_t index, const char* name) {
    const OpInfo& info = *op_info(static_cast<uint16_t>(code));
    const uint32_t n = is_int ? info.num_iattrs : info.num_fattrs;
    const char* const* names = is_int ? info.iattr_names : info.fattr_names;
    if (index >= n || strcmp(names[index], name) != 0) {
      fail_msg("%s: %s attribute %u is not %s", info.name, is_int ? "int" : "float", index, name);
    }
    ++checked;
  };
#define REMAT_TEST_INT_(i, pair) \
  expect(code, true, attr_ns::REMAT_ATTR_LIST_NAME(pair).index, REMAT_ATTR_LIST_NAME_STRING(pair));
#define REMAT_TEST_FLOAT_(i, pair) \
  expect(code, false, attr_ns::REMAT_ATTR_LIST_NAME(pair).index, REMAT_ATTR_LIST_NAME_STRING(pair));
#define REMAT_TEST_INTS_REMAT_ATTRS(...) REMAT_ATTR_LIST_FOR_EACH(REMAT_TEST_INT_, __VA_ARGS__)
#define REMAT_TEST_INTS_REMAT_ATTRS_VARIABLE
#define REMAT_TEST_FLOATS_REMAT_ATTRS(...) REMAT_ATTR_LIST_FOR_EACH(REMAT_TEST_FLOAT_, __VA_ARGS__)
#define REMAT_TEST_OP_(Name, snake, value, in, out, iattrs, fattrs, dtypes, rule) \
  {                                                                               \
    namespace attr_ns = remat::attr::snake;                                       \
    const OpCode code = OpCode::k##Name;                                          \
    (void)code;                                                                   \
    REMAT_TEST_INTS_##iattrs REMAT_TEST_FLOATS_##fattrs                           \
  }
  REMAT_OP_CATALOGUE(REMAT_TEST_OP_)
#undef REMAT_TEST_OP_
#undef REMAT_TEST_FLOATS_REMAT_ATTRS
#undef REMAT_TEST_INTS_REMAT_ATTRS_VARIABLE
#undef REMAT_TEST_INTS_REMAT_ATTRS
#undef REMAT_TEST_FLOAT_
#undef REMAT_TEST_INT_
  int named = 0;
  for (uint16_t code = 1; code < kOpCodeCount; ++code) {
    const OpInfo& info = *op_info(code);
    named += (info.num_iattrs == remat::kVariableAttrs ? 0 : info.num_iattrs) + info.num_fattrs;
  }
  assert_int_equal(checked, named);
  static_assert(
      remat::attr::adam_update::eps.index == 3 && remat::attr::adam_update::eps.fallback == 1e-8f,
      "adam's eps");
  static_assert(remat::attr::avg_pool::count_include_pad.index == 7 &&
                    remat::attr::avg_pool::count_include_pad.fallback == 1,
                "avg_pool's count_include_pad");
  assert_int_equal(remat::optimizer_lr(static_cast<uint16_t>(OpCode::kAdamUpdate))->index, 0);
  assert_null(remat::optimizer_lr(static_cast<uint16_t>(OpCode::kMatMul)));
}

void dtypes_mark_ids_labels_and_copies(void**) {
  using remat::OpDtypes;
  for (uint16_t code = 1; code < kOpCodeCount; ++code) {
    const OpInfo& info = *op_info(code);
    OpDtypes want = OpDtypes::kF32;
    switch (static_cast<OpCode>(code)) {
      case OpCode::kEmbedding: want = OpDtypes::kI32Input0; break;
      case OpCode::kEmbeddingGrad:
      case OpCode::kSoftmaxCrossEntropy:
      case OpCode::kSoftmaxCrossEntropyGrad: want = OpDtypes::kI32Input1; break;
      case OpCode::kSpill:
      case OpCode::kPrefetch:
      case OpCode::kWait: want = OpDtypes::kAnyDtype; break;
      case OpCode::kIncrement: want = OpDtypes::kI64; break;
      default: break;
    }
    if (info.dtypes != want)
      fail_msg("%s: dtypes %d, expected %d", info.name, static_cast<int>(info.dtypes),
               static_cast<int>(want));
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_opcode_has_an_entry_and_nothing_else_has_one),
      cmocka_unit_test(names_are_unique_and_find_their_op),
      cmocka_unit_test(arities_agree_with_the_names_of_tensors_and_attributes),
      cmocka_unit_test(named_attributes_find_their_index_and_default),
      cmocka_unit_test(dtypes_mark_ids_labels_and_copies),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
