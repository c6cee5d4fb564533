// Per-op validation (common/op_check.h): every opcode's well-formed case passes, and each kind
// of malformed op gets its specific status and a message naming the op and the value at fault.
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
// cmocka 1.1 declares its functions without an extern "C" guard.
extern "C" {
#include <cmocka.h>
}

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <initializer_list>

#include "common/op_check.h"
#include "common/ops.h"

using remat::check_op;
using remat::OpCode;
using remat::ShapeView;

namespace {

constexpr uint8_t F32 = REMAT_DTYPE_F32;
constexpr uint8_t F16 = REMAT_DTYPE_F16;
constexpr uint8_t BF16 = REMAT_DTYPE_BF16;
constexpr uint8_t I32 = REMAT_DTYPE_I32;
constexpr uint16_t kCount = static_cast<uint16_t>(OpCode::kCount);
constexpr int64_t k2p20 = int64_t{1} << 20;
constexpr int64_t k2p32 = int64_t{1} << 32;
constexpr int64_t k2p40 = int64_t{1} << 40;

// One op under test. It owns its tensors' dims and its attributes, so the views stay valid
// while it lives; it is not copyable for that reason.
struct Case {
  static constexpr uint32_t kSlots = 8;
  static constexpr int kDims = 8;

  explicit Case(uint16_t op) : code(op) {
    for (uint32_t i = 0; i < kSlots; ++i) {
      inputs[i].dims = in_dims[i];
      outputs[i].dims = out_dims[i];
    }
  }
  explicit Case(OpCode op) : Case(static_cast<uint16_t>(op)) {}
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;

  Case& in(uint8_t dtype, std::initializer_list<int64_t> dims) {
    set(&inputs[num_in], in_dims[num_in], dims).dtype = dtype;
    ++num_in;
    return *this;
  }
  Case& out(uint8_t dtype, std::initializer_list<int64_t> dims) {
    set(&outputs[num_out], out_dims[num_out], dims).dtype = dtype;
    ++num_out;
    return *this;
  }
  // Gives input |i| (output |i|) new dims, keeping its dtype.
  Case& in_shape(uint32_t i, std::initializer_list<int64_t> dims) {
    set(&inputs[i], in_dims[i], dims);
    return *this;
  }
  Case& out_shape(uint32_t i, std::initializer_list<int64_t> dims) {
    set(&outputs[i], out_dims[i], dims);
    return *this;
  }
  Case& ia(std::initializer_list<int64_t> values) {
    num_iattrs = 0;
    for (int64_t v : values) iattrs[num_iattrs++] = v;
    return *this;
  }
  Case& fa(std::initializer_list<float> values) {
    num_fattrs = 0;
    for (float v : values) fattrs[num_fattrs++] = v;
    return *this;
  }
  ShapeView& view(bool output, uint32_t i) { return output ? outputs[i] : inputs[i]; }
  int64_t* dims_of(bool output, uint32_t i) { return output ? out_dims[i] : in_dims[i]; }

  remat_status run() {
    return check_op(code, inputs, num_in, outputs, num_out, iattrs, num_iattrs, fattrs, num_fattrs,
                    message, sizeof(message));
  }

  uint16_t code;
  ShapeView inputs[kSlots] = {};
  ShapeView outputs[kSlots] = {};
  int64_t in_dims[kSlots][kDims] = {};
  int64_t out_dims[kSlots][kDims] = {};
  uint32_t num_in = 0, num_out = 0;
  int64_t iattrs[16] = {};
  float fattrs[8] = {};
  uint32_t num_iattrs = 0, num_fattrs = 0;
  char message[256] = {};

 private:
  static ShapeView& set(ShapeView* v, int64_t* storage, std::initializer_list<int64_t> dims) {
    int n = 0;
    for (int64_t d : dims) storage[n++] = d;
    v->rank = static_cast<uint8_t>(n);
    v->dims = storage;
    return *v;
  }
};

// Runs |c| and asserts status |want| and, on failure, a message that names the op and holds
// every string of |parts|.
void expect(Case& c, remat_status want, std::initializer_list<const char*> parts = {}) {
  const remat_status got = c.run();
  if (got != want) {
    print_error("%s: status %d, expected %d; message \"%s\"\n", remat::op_name(c.code), got, want,
                c.message);
    fail();
  }
  if (want == REMAT_OK) {
    assert_string_equal(c.message, "");
    return;
  }
  if (remat::op_info(c.code) != nullptr && strstr(c.message, remat::op_name(c.code)) != c.message) {
    print_error("message \"%s\" does not start with the op's name\n", c.message);
    fail();
  }
  for (const char* part : parts) {
    if (strstr(c.message, part) == nullptr) {
      print_error("message \"%s\" lacks \"%s\"\n", c.message, part);
      fail();
    }
  }
}

// ---- One well-formed case per opcode ------------------------------------------------------------

void unary(Case& c) { c.in(F32, {2, 3}).out(F32, {2, 3}); }
void binary(Case& c) { c.in(F32, {2, 3}).in(F32, {2, 3}).out(F32, {2, 3}); }

void matmul_ok(Case& c) {
  c.in(F32, {2, 3}).in(F32, {3, 4}).out(F32, {2, 4}).ia({0, 0}).fa({1.0f});
}
void bias_add_ok(Case& c) { c.in(F32, {2, 3, 4}).in(F32, {3, 4}).out(F32, {2, 3, 4}); }
void reduce_leading_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {4}); }
void layernorm_ok(Case& c) {
  c.in(F32, {2, 3, 4}).in(F32, {4}).in(F32, {4});
  c.out(F32, {2, 3, 4}).out(F32, {2, 3}).out(F32, {2, 3}).fa({1e-5f});
}
void layernorm_grad_ok(Case& c) {
  c.in(F32, {2, 3, 4}).in(F32, {2, 3, 4}).in(F32, {6}).in(F32, {6}).in(F32, {4});
  c.out(F32, {2, 3, 4}).out(F32, {4}).out(F32, {4});
}
void dropout_ok(Case& c) { unary(c); c.ia({7}).fa({0.1f}); }
void embedding_ok(Case& c) { c.in(I32, {2, 5}).in(F32, {11, 8}).out(F32, {2, 5, 8}); }
void embedding_grad_ok(Case& c) { c.in(F32, {2, 5, 8}).in(I32, {2, 5}).out(F32, {11, 8}); }
void permute_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {4, 2, 3}).ia({3, 2, 3, 4, 2, 0, 1}); }
void copy_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {6, 4}); }
void select_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {2, 4}).ia({1, 2}); }
void select_grad_ok(Case& c) { c.in(F32, {2, 4}).out(F32, {2, 3, 4}).ia({1, 2}); }
void sce_ok(Case& c) { c.in(F32, {4, 3}).in(I32, {4}).out(F32, {1}).out(F32, {4, 3}); }
void sce_grad_ok(Case& c) { c.in(F32, {4, 3}).in(I32, {4}).out(F32, {4, 3}); }
void mse_ok(Case& c) { c.in(F32, {4, 2}).in(F32, {4, 2}).out(F32, {1}); }
void mse_grad_ok(Case& c) { c.in(F32, {4, 2}).in(F32, {4, 2}).out(F32, {4, 2}); }
void sgd_ok(Case& c) {
  c.in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4}).out(F32, {3, 4}).out(F32, {3, 4});
  c.fa({0.01f, 0.9f, 0.0f});
}
void adam_ok(Case& c) {
  c.in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4});
  c.out(F32, {3, 4}).out(F32, {3, 4}).out(F32, {3, 4});
  c.ia({0}).fa({1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f});
}
void wait_ok(Case& c) { c.in(F32, {2, 3}); }
void scale_ok(Case& c) { unary(c); c.fa({0.5f}); }

using Builder = void (*)(Case&);
// Indexed by opcode value; order must follow OpCode.
const Builder kWellFormed[] = {
    nullptr,      matmul_ok,      bias_add_ok,  reduce_leading_ok, binary,       binary,
    unary,        binary,         unary,        binary,            unary,        binary,
    unary,        binary,         unary,        binary,            layernorm_ok, layernorm_grad_ok,
    dropout_ok,   dropout_ok,     embedding_ok, embedding_grad_ok, permute_ok,   copy_ok,
    select_ok,    select_grad_ok, sce_ok,       sce_grad_ok,       mse_ok,       mse_grad_ok,
    sgd_ok,       adam_ok,        unary,        unary,             wait_ok,      scale_ok,
};
static_assert(sizeof(kWellFormed) / sizeof(kWellFormed[0]) == kCount, "one case per opcode");

void build(Case& c) { kWellFormed[c.code](c); }

// Calls |body| with the well-formed case of every opcode, built afresh each time.
template <typename F>
void for_each_op(F body) {
  for (uint16_t code = 1; code < kCount; ++code) {
    Case c(code);
    build(c);
    body(c);
  }
}

// Calls |body| once per tensor slot of every op's well-formed case, with a fresh case.
template <typename F>
void for_each_tensor(F body) {
  for (uint16_t code = 1; code < kCount; ++code) {
    Case probe(code);
    build(probe);
    for (int side = 0; side < 2; ++side) {
      const uint32_t n = side ? probe.num_out : probe.num_in;
      for (uint32_t i = 0; i < n; ++i) {
        Case c(code);
        build(c);
        char name[32];
        snprintf(name, sizeof(name), "%s %u (", side ? "output" : "input", i);
        body(c, side == 1, i, static_cast<const char*>(name));
      }
    }
  }
}

// ---- Every opcode -------------------------------------------------------------------------------

void every_opcode_has_a_well_formed_case_that_passes(void**) {
  for_each_op([](Case& c) { expect(c, REMAT_OK); });
}

void unknown_opcodes_0_36_and_65535_are_rejected(void**) {
  const uint16_t codes[] = {0, kCount, 65535};
  const char* names[] = {"unknown opcode 0", "unknown opcode 36", "unknown opcode 65535"};
  for (int i = 0; i < 3; ++i) {
    Case c(codes[i]);
    unary(c);
    expect(c, REMAT_ERROR_UNKNOWN_OP, {names[i]});
  }
}

void every_op_with_one_input_too_many_or_too_few_is_rejected(void**) {
  for_each_op([](Case& c) {
    c.in(F32, {2, 3});
    expect(c, REMAT_ERROR_BAD_ARITY, {"inputs"});
  });
  for_each_op([](Case& c) {
    --c.num_in;
    expect(c, REMAT_ERROR_BAD_ARITY, {"inputs"});
  });
}

void every_op_with_one_output_too_many_or_too_few_is_rejected(void**) {
  for_each_op([](Case& c) {
    c.out(F32, {2, 3});
    expect(c, REMAT_ERROR_BAD_ARITY, {"outputs"});
  });
  for_each_op([](Case& c) {
    if (c.num_out == 0) return;
    --c.num_out;
    expect(c, REMAT_ERROR_BAD_ARITY, {"outputs"});
  });
}

void every_op_with_an_attribute_too_many_or_too_few_is_rejected(void**) {
  for_each_op([](Case& c) {
    c.iattrs[c.num_iattrs++] = 0;
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
  for_each_op([](Case& c) {
    if (c.num_iattrs == 0 || c.code == static_cast<uint16_t>(OpCode::kPermute)) return;
    --c.num_iattrs;
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
  const int64_t huge[][3] = {{k2p32, k2p32, 1}, {INT64_MAX, 1, 1}, {k2p20, k2p20, 2},
                             {1, 1, k2p40 + 1}, {INT64_MAX, INT64_MAX, INT64_MAX}};
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
    const uint8_t wrong[] = {any ? uint8_t{4} : v.dtype == I32 ? F32 : I32, uint8_t{200}};
    for (uint8_t dtype : wrong) {
      v.dtype = dtype;
      expect(c, REMAT_ERROR_BAD_DTYPE, {name, "dtype"});
    }
  });
}

void every_f32_tensor_given_f16_or_bf16_is_rejected(void**) {
  for_each_tensor([](Case& c, bool output, uint32_t i, const char* name) {
    const OpCode op = static_cast<OpCode>(c.code);
    ShapeView& v = c.view(output, i);
    const bool any = op == OpCode::kSpill || op == OpCode::kPrefetch || op == OpCode::kWait;
    if (v.dtype != F32 || any) return;
    v.dtype = F16;
    expect(c, REMAT_ERROR_BAD_DTYPE, {name, "has dtype f16", "expected f32"});
    v.dtype = BF16;
    expect(c, REMAT_ERROR_BAD_DTYPE, {name, "has dtype bf16", "expected f32"});
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
    assert_int_equal(check_op(c.code, c.inputs, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1, buffer,
                              capacity),
                     REMAT_ERROR_BAD_SHAPE);
    assert_int_equal(strlen(buffer), capacity - 1);
    assert_int_equal(buffer[capacity], 'x');
    assert_memory_equal(buffer, "matmul: input 1 (B) has dims [4, 5]", capacity - 1);
  }
  char untouched = 'x';
  assert_int_equal(check_op(c.code, c.inputs, 2, c.outputs, 1, c.iattrs, 2, c.fattrs, 1,
                            &untouched, 0),
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
  const int64_t ints[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 13,
                          k2p20, k2p32, k2p40, INT64_MAX, INT64_MIN};
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
        case 4: case 5: c.view(output, slot).rank = static_cast<uint8_t>(next() % 9); break;
        case 6: case 7: case 8: case 9:
          c.dims_of(output, slot)[next() % Case::kDims] = ints[next() % kInts];
          break;
        case 10: case 11: c.view(output, slot).dtype = static_cast<uint8_t>(next() % 6); break;
        case 12: case 13: c.iattrs[next() % 16] = ints[next() % kInts]; break;
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
                    OpCode::kTanhGrad, OpCode::kSigmoidGrad, OpCode::kMseGrad}) {
    Case c(op);
    build(c);
    c.in_shape(1, {2, 5});
    expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (", "(10 elements), expected"});
  }
  for (OpCode op : {OpCode::kRelu, OpCode::kGelu, OpCode::kTanh, OpCode::kSigmoid, OpCode::kCopy,
                    OpCode::kScale, OpCode::kDropout, OpCode::kDropoutGrad, OpCode::kMseGrad}) {
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

void scale_with_infinite_alpha_is_rejected(void**) {
  Case c(OpCode::kScale);
  scale_ok(c);
  c.fattrs[0] = -INFINITY;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (alpha) is -inf"});
}

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
  sce_ok(c);
  c.in_shape(0, {4, 3, 1});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 0 (logits) has dims [4, 3, 1]", "rank 3, expected 2"});
}

void softmax_cross_entropy_with_labels_not_one_per_row_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  sce_ok(c);
  c.in_shape(1, {5});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"input 1 (labels) has dims [5]", "expected N = 4"});
  c.in_shape(1, {4});
  c.inputs[1].dtype = F32;
  expect(c, REMAT_ERROR_BAD_DTYPE, {"input 1 (labels) has dtype f32", "expected i32"});
}

void softmax_cross_entropy_with_a_loss_of_two_elements_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  sce_ok(c);
  c.out_shape(0, {2});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 0 (loss) has dims [2]", "expected 1 element"});
  c.out_shape(0, {1, 1});
  expect(c, REMAT_OK);
}

void softmax_cross_entropy_with_probs_unlike_logits_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropy);
  sce_ok(c);
  c.out_shape(1, {3, 4});
  expect(c, REMAT_ERROR_BAD_SHAPE, {"output 1 (probs) has dims [3, 4]", "last dim 3"});
}

void softmax_cross_entropy_grad_with_mismatched_shapes_is_rejected(void**) {
  Case c(OpCode::kSoftmaxCrossEntropyGrad);
  sce_grad_ok(c);
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
  sgd_ok(c);
  c.num_in = 2;
  c.num_out = 1;
  expect(c, REMAT_ERROR_BAD_ARITY, {"fattr 1 (momentum) is 0.9", "needs input 2 and output 1"});
}

void sgd_with_infinite_lr_or_nan_weight_decay_is_rejected(void**) {
  Case c(OpCode::kSgdUpdate);
  sgd_ok(c);
  c.fattrs[0] = INFINITY;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 0 (lr) is inf"});
  c.fattrs[0] = 0.01f;
  c.fattrs[2] = NAN;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"fattr 2 (weight_decay) is nan"});
}

void sgd_with_mismatched_param_grad_or_velocity_is_rejected(void**) {
  Case c(OpCode::kSgdUpdate);
  sgd_ok(c);
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
  adam_ok(c);
  c.iattrs[0] = 1;
  expect(c, REMAT_OK);
  c.iattrs[0] = 2;
  expect(c, REMAT_ERROR_BAD_SHAPE, {"iattr 0 (decoupled) is 2", "expected 0 or 1"});
}

void adam_with_betas_outside_0_1_or_nonpositive_eps_is_rejected(void**) {
  Case c(OpCode::kAdamUpdate);
  adam_ok(c);
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
  adam_ok(c);
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
    c.inputs[0].dtype = 4;
    expect(c, REMAT_ERROR_BAD_DTYPE, {"input 0 (", "dtype unknown (4)"});
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
      cmocka_unit_test(every_opcode_has_a_well_formed_case_that_passes),
      cmocka_unit_test(unknown_opcodes_0_36_and_65535_are_rejected),
      cmocka_unit_test(every_op_with_one_input_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_op_with_one_output_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_op_with_an_attribute_too_many_or_too_few_is_rejected),
      cmocka_unit_test(every_tensor_of_rank_0_or_rank_7_is_rejected),
      cmocka_unit_test(every_tensor_with_a_zero_or_negative_dim_is_rejected),
      cmocka_unit_test(every_tensor_with_more_than_2_40_elements_is_rejected),
      cmocka_unit_test(a_tensor_of_exactly_2_40_elements_is_accepted),
      cmocka_unit_test(every_tensor_of_a_dtype_the_op_does_not_take_is_rejected),
      cmocka_unit_test(every_f32_tensor_given_f16_or_bf16_is_rejected),
      cmocka_unit_test(every_nan_or_infinite_float_attribute_is_rejected),
      cmocka_unit_test(null_arrays_with_nonzero_counts_are_invalid_arguments),
      cmocka_unit_test(huge_counts_are_rejected_before_anything_is_read),
      cmocka_unit_test(messages_are_truncated_and_terminated_in_small_buffers),
      cmocka_unit_test(random_mutations_never_crash_and_give_a_known_status),
      cmocka_unit_test(matmul_in_batched_broadcast_and_reduce_modes_is_accepted),
      cmocka_unit_test(matmul_with_mismatched_inner_dims_is_rejected),
      cmocka_unit_test(matmul_with_transposed_operands_contracts_the_transposed_dims),
      cmocka_unit_test(matmul_with_wrong_output_dims_is_rejected),
      cmocka_unit_test(matmul_with_batch_sizes_that_fit_no_mode_is_rejected),
      cmocka_unit_test(matmul_with_trans_flag_2_or_negative_is_rejected),
      cmocka_unit_test(matmul_with_nan_alpha_is_rejected),
      cmocka_unit_test(matmul_with_a_vector_operand_is_rejected),
      cmocka_unit_test(bias_add_with_bias_not_the_trailing_dims_of_x_is_rejected),
      cmocka_unit_test(bias_add_with_output_of_another_size_is_rejected),
      cmocka_unit_test(reduce_leading_with_output_not_the_trailing_dims_is_rejected),
      cmocka_unit_test(elementwise_ops_with_tensors_of_different_sizes_are_rejected),
      cmocka_unit_test(elementwise_ops_accept_reshaped_tensors_of_equal_size),
      cmocka_unit_test(softmax_with_rows_of_another_length_is_rejected),
      cmocka_unit_test(scale_with_infinite_alpha_is_rejected),
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
