// Per-op validation (plan/op_check.h), the checks every opcode gets: each well-formed case
// passes; wrong arity, rank, dims, element count, dtype or float attribute is rejected with
// its specific status and a message; the check is total on null arrays, huge counts, small
// message buffers and random mutations.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/op_check.h"
#include "plan/ops.h"
#include "op_check_cases.h"

using remat::check_op;
using remat::OpCode;
using remat::ShapeView;

namespace {

// ---- Every opcode -------------------------------------------------------------------------------

void every_opcode_has_a_well_formed_case_that_passes(void**) {
  for_each_op([](Case& c) { expect(c, REMAT_OK); });
}

void unknown_opcodes_0_one_past_the_last_and_65535_are_rejected(void**) {
  const uint16_t codes[] = {0, kCount, 65535};
  for (uint16_t code : codes) {
    char name[64];
    snprintf(name, sizeof(name), "unknown opcode %u", static_cast<unsigned>(code));
    char range[64];
    snprintf(range, sizeof(range), "expected 1..%u", static_cast<unsigned>(kCount - 1));
    Case c(code);
    unary(c);
    expect(c, REMAT_ERROR_UNKNOWN_OP, {name, range});
  }
}

// One past the op's range: optional tensors (conv's bias and workspace, concat's inputs past
// the second) make the well-formed count any value of the range.
void every_op_with_one_input_too_many_or_too_few_is_rejected(void**) {
  for_each_op([](Case& c) {
    while (c.num_in <= remat::op_info(c.code)->max_inputs) c.in(F32, {2, 3});
    expect(c, REMAT_ERROR_BAD_ARITY, {"inputs"});
  });
  for_each_op([](Case& c) {
    c.num_in = remat::op_info(c.code)->min_inputs - 1u;
    expect(c, REMAT_ERROR_BAD_ARITY, {"inputs"});
  });
}

void every_op_with_one_output_too_many_or_too_few_is_rejected(void**) {
  for_each_op([](Case& c) {
    while (c.num_out <= remat::op_info(c.code)->max_outputs) c.out(F32, {2, 3});
    expect(c, REMAT_ERROR_BAD_ARITY, {"outputs"});
  });
  for_each_op([](Case& c) {
    if (remat::op_info(c.code)->min_outputs == 0) return;
    c.num_out = remat::op_info(c.code)->min_outputs - 1u;
    expect(c, REMAT_ERROR_BAD_ARITY, {"outputs"});
  });
}

void every_op_with_an_attribute_too_many_or_too_few_is_rejected(void**) {
  // One past the op's full list (a case may give fewer: max_pool's dilations may be left out).
  for_each_op([](Case& c) {
    const remat::OpInfo* info = remat::op_info(c.code);
    if (info->num_iattrs != remat::kVariableAttrs) {
      while (c.num_iattrs <= info->num_iattrs) c.iattrs[c.num_iattrs++] = 1;
    } else {
      c.iattrs[c.num_iattrs++] = 0;
    }
    expect(c, REMAT_ERROR_BAD_ARITY, {"iattrs"});
  });
  for_each_op([](Case& c) {
    c.fattrs[c.num_fattrs++] = 0.0f;
    expect(c, REMAT_ERROR_BAD_ARITY, {"fattrs"});
  });
  for_each_op([](Case& c) {
    if (c.num_fattrs == 0) return;
    --c.num_fattrs;
    expect(c, REMAT_ERROR_BAD_ARITY, {"fattrs"});
  });
  // One short of the fewest the op takes.
  for_each_op([](Case& c) {
    if (c.num_iattrs == 0 || c.code == static_cast<uint16_t>(OpCode::kPermute)) return;
    c.num_iattrs = remat::op_info(c.code)->min_iattrs - 1u;
    expect(c, REMAT_ERROR_BAD_ARITY, {"iattrs"});
  });
}

void every_tensor_of_rank_0_or_rank_7_is_rejected(void**) {
  for (uint8_t rank : {uint8_t{0}, uint8_t{7}, uint8_t{255}}) {
    for_each_tensor([rank](Case& c, bool output, uint32_t i, const char* name) {
      c.view(output, i).rank = rank;
      char found[32];
      snprintf(found, sizeof(found), "rank %u, expected 1..6", rank);
      expect(c, REMAT_ERROR_BAD_SHAPE, {name, found});
    });
  }
}

void every_tensor_with_a_zero_or_negative_dim_is_rejected(void**) {
  for (int64_t d : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    for_each_tensor([d](Case& c, bool output, uint32_t i, const char* name) {
      c.dims_of(output, i)[c.view(output, i).rank - 1] = d;
      char found[48];
      snprintf(found, sizeof(found), "is %lld, expected >= 1", static_cast<long long>(d));
      expect(c, REMAT_ERROR_BAD_SHAPE, {name, found});
    });
  }
}

void every_tensor_with_more_than_2_40_elements_is_rejected(void**) {
  // 2^32 * 2^32 wraps to 0 in int64 arithmetic, INT64_MAX is one dim, 2^41 is just over.
  const int64_t huge[][3] = {{k2p32, k2p32, 1},
                             {INT64_MAX, 1, 1},
                             {k2p20, k2p20, 2},
                             {1, 1, k2p40 + 1},
                             {INT64_MAX, INT64_MAX, INT64_MAX}};
  for (const auto& dims : huge) {
    for_each_tensor([&dims](Case& c, bool output, uint32_t i, const char* name) {
      c.view(output, i).rank = 3;
      for (int k = 0; k < 3; ++k) c.dims_of(output, i)[k] = dims[k];
      expect(c, REMAT_ERROR_BAD_SHAPE, {name, "more than 2^40 elements"});
    });
  }
}

void a_tensor_of_exactly_2_40_elements_is_accepted(void**) {
  Case c(OpCode::kCopy);
  c.in(F32, {k2p20, k2p20}).out(F32, {k2p40});
  expect(c, REMAT_OK);
}

void every_tensor_of_a_dtype_the_op_does_not_take_is_rejected(void**) {
  for_each_tensor([](Case& c, bool output, uint32_t i, const char* name) {
    const OpCode op = static_cast<OpCode>(c.code);
    ShapeView& v = c.view(output, i);
    const bool any = op == OpCode::kSpill || op == OpCode::kPrefetch || op == OpCode::kWait;
    const uint8_t wrong[] = {any ? uint8_t{I64 + 1} : v.dtype == I32 ? F32 : I32, uint8_t{200}};
    for (uint8_t dtype : wrong) {
      v.dtype = dtype;
      expect(c, REMAT_ERROR_BAD_DTYPE, {name, "dtype"});
    }
  });
}

// (A copy between regions keeps its dtype: test_op_check_layers.cc.)
void every_f32_tensor_given_f16_or_bf16_is_accepted(void**) {
  for_each_tensor([](Case& c, bool output, uint32_t i, const char*) {
    const OpCode op = static_cast<OpCode>(c.code);
    ShapeView& v = c.view(output, i);
    // The all-reduce ops take float32 alone (what a communicator sums; test_op_check_linear).
    if (v.dtype != F32 || op == OpCode::kSpill || op == OpCode::kPrefetch ||
        op == OpCode::kAllreduceStart || op == OpCode::kAllreduceWait)
      return;
    for (uint8_t dtype : {F16, BF16}) {
      v.dtype = dtype;
      expect(c, REMAT_OK);
    }
  });
}

// Each tensor takes its own float dtype: every f32 tensor of an op, alternately f16 and bf16.
void an_op_mixing_f32_f16_and_bf16_tensors_is_accepted(void**) {
  for_each_op([](Case& c) {
    const OpCode op = static_cast<OpCode>(c.code);
    if (op == OpCode::kSpill || op == OpCode::kPrefetch || op == OpCode::kWait ||
        op == OpCode::kAllreduceStart || op == OpCode::kAllreduceWait)
      return;
    uint32_t k = 0;
    for (bool output : {false, true}) {
      for (uint32_t i = 0; i < (output ? c.num_out : c.num_in); ++i) {
        ShapeView& v = c.view(output, i);
        if (v.dtype == F32 && k++ % 3 != 0) v.dtype = k % 2 ? F16 : BF16;
      }
    }
    expect(c, REMAT_OK);
  });
}

void every_integer_tensor_given_f16_or_bf16_is_rejected(void**) {
  for_each_tensor([](Case& c, bool output, uint32_t i, const char* name) {
    const OpCode op = static_cast<OpCode>(c.code);
    ShapeView& v = c.view(output, i);
    const bool any = op == OpCode::kSpill || op == OpCode::kPrefetch || op == OpCode::kWait;
    if (v.dtype == F32 || any) return;
    const char* expected = v.dtype == I32 ? "expected i32" : "expected i64";
    v.dtype = F16;
    expect(c, REMAT_ERROR_BAD_DTYPE, {name, "has dtype f16", expected});
    v.dtype = BF16;
    expect(c, REMAT_ERROR_BAD_DTYPE, {name, "has dtype bf16", expected});
  });
}

void every_nan_or_infinite_float_attribute_is_rejected(void**) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    for_each_op([bad](Case& c) {
      for (uint32_t i = 0; i < c.num_fattrs; ++i) {
        Case d(c.code);
        build(d);
        d.fattrs[i] = bad;
        char found[32];
        snprintf(found, sizeof(found), "fattr %u (", i);
        expect(d, REMAT_ERROR_BAD_SHAPE, {found, isnan(bad) ? "nan" : "inf", "finite"});
      }
    });
  }
}

// ---- Totality -----------------------------------------------------------------------------------

void null_arrays_with_nonzero_counts_are_invalid_arguments(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  expect(c, REMAT_OK);
  assert_int_equal(check_op(c.code, nullptr, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1, c.message,
                            sizeof(c.message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(c.message, "inputs is null"));
  assert_int_equal(check_op(c.code, c.inputs, 2, c.outputs, 1, nullptr, 2, c.fattrs, 1, c.message,
                            sizeof(c.message)),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(c.message, "iattrs is null"));
  Case p(OpCode::kPermute);
  permute_ok(p);
  assert_int_equal(check_op(p.code, p.inputs, 1, p.outputs, 1, nullptr, 7, nullptr, 0, nullptr, 0),
                   REMAT_ERROR_INVALID_ARGUMENT);
  c.inputs[1].dims = nullptr;
  expect(c, REMAT_ERROR_INVALID_ARGUMENT, {"input 1 (B)", "null dims"});
}

void huge_counts_are_rejected_before_anything_is_read(void**) {
  Case c(OpCode::kAdd);
  binary(c);
  assert_int_equal(check_op(c.code, c.inputs, UINT32_MAX, c.outputs, 1, nullptr, 0, nullptr, 0,
                            c.message, sizeof(c.message)),
                   REMAT_ERROR_BAD_ARITY);
  assert_non_null(strstr(c.message, "4294967295 inputs, expected 2"));
}

void messages_are_truncated_and_terminated_in_small_buffers(void**) {
  Case c(OpCode::kMatMul);
  matmul_ok(c);
  c.in_shape(1, {4, 5});
  for (size_t capacity : {size_t{1}, size_t{2}, size_t{9}, size_t{36}}) {
    char buffer[64];
    memset(buffer, 'x', sizeof(buffer));
    assert_int_equal(
        check_op(c.code, c.inputs, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1, buffer, capacity),
        REMAT_ERROR_BAD_SHAPE);
    assert_int_equal(strlen(buffer), capacity - 1);
    assert_int_equal(buffer[capacity], 'x');
    assert_memory_equal(buffer, "matmul: input 1 (B) has dims [4, 5]", capacity - 1);
  }
  char untouched = 'x';
  assert_int_equal(
      check_op(c.code, c.inputs, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1, &untouched, 0),
      REMAT_ERROR_BAD_SHAPE);
  assert_int_equal(untouched, 'x');
  assert_int_equal(
      check_op(c.code, c.inputs, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1, nullptr, 64),
      REMAT_ERROR_BAD_SHAPE);
}

// Mutates well-formed cases at random (counts, ranks, dims, dtypes, attributes): every result
// is a known status with a terminated message. Run under ASan/UBSan it also shows that no
// input makes the check read out of bounds, overflow or divide by zero.
void random_mutations_never_crash_and_give_a_known_status(void**) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state]() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const int64_t ints[] = {-1, 0,  1,     2,     3,     4,         5,        6,
                          7,  13, k2p20, k2p32, k2p40, INT64_MAX, INT64_MIN};
  const float floats[] = {NAN, INFINITY, -1.0f, 0.0f, 0.5f, 0.9f, 1.0f, 2.0f, -0.0f, 1e-30f};
  const uint64_t kInts = sizeof(ints) / sizeof(ints[0]);
  const uint64_t kFloats = sizeof(floats) / sizeof(floats[0]);
  for (int iteration = 0; iteration < 200000; ++iteration) {
    Case c(static_cast<uint16_t>(1 + next() % (kCount - 1)));
    build(c);
    const int mutations = 1 + static_cast<int>(next() % 3);
    for (int m = 0; m < mutations; ++m) {
      // Mostly the tensors and attributes the op uses; counts and the opcode now and then.
      const bool output = next() % 2;
      const uint32_t used = output ? c.num_out : c.num_in;
      const uint32_t slot = static_cast<uint32_t>(next() % (used ? used : 1));
      switch (next() % 16) {
        case 0: c.num_in = static_cast<uint32_t>(next() % (Case::kSlots + 1)); break;
        case 1: c.num_out = static_cast<uint32_t>(next() % (Case::kSlots + 1)); break;
        case 2: c.num_iattrs = static_cast<uint32_t>(next() % 17); break;
        case 3: c.code = static_cast<uint16_t>(next() % (kCount + 2)); break;
        case 4:
        case 5: c.view(output, slot).rank = static_cast<uint8_t>(next() % 9); break;
        case 6:
        case 7:
        case 8:
        case 9: c.dims_of(output, slot)[next() % Case::kDims] = ints[next() % kInts]; break;
        case 10:
        case 11: c.view(output, slot).dtype = static_cast<uint8_t>(next() % 6); break;
        case 12:
        case 13: c.iattrs[next() % 16] = ints[next() % kInts]; break;
        default: c.fattrs[next() % 8] = floats[next() % kFloats]; break;
      }
    }
    const remat_status s = c.run();
    assert_true(s == REMAT_OK || s == REMAT_ERROR_UNKNOWN_OP || s == REMAT_ERROR_BAD_ARITY ||
                s == REMAT_ERROR_BAD_SHAPE || s == REMAT_ERROR_BAD_DTYPE);
    assert_true(memchr(c.message, '\0', sizeof(c.message)) != nullptr);
    assert_true((s == REMAT_OK) == (c.message[0] == '\0'));
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_opcode_has_a_well_formed_case_that_passes),
      cmocka_unit_test(unknown_opcodes_0_one_past_the_last_and_65535_are_rejected),
      cmocka_unit_test(every_op_with_one_input_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_op_with_one_output_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_op_with_an_attribute_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_tensor_of_rank_0_or_rank_7_is_rejected),
      cmocka_unit_test(every_tensor_with_a_zero_or_negative_dim_is_rejected),
      cmocka_unit_test(every_tensor_with_more_than_2_40_elements_is_rejected),
      cmocka_unit_test(a_tensor_of_exactly_2_40_elements_is_accepted),
      cmocka_unit_test(every_tensor_of_a_dtype_the_op_does_not_take_is_rejected),
      cmocka_unit_test(every_f32_tensor_given_f16_or_bf16_is_accepted),
      cmocka_unit_test(an_op_mixing_f32_f16_and_bf16_tensors_is_accepted),
      cmocka_unit_test(every_integer_tensor_given_f16_or_bf16_is_rejected),
      cmocka_unit_test(every_nan_or_infinite_float_attribute_is_rejected),
      cmocka_unit_test(null_arrays_with_nonzero_counts_are_invalid_arguments),
      cmocka_unit_test(huge_counts_are_rejected_before_anything_is_read),
      cmocka_unit_test(messages_are_truncated_and_terminated_in_small_buffers),
      cmocka_unit_test(random_mutations_never_crash_and_give_a_known_status),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
