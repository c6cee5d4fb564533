// The shared op_check test cases: the expectation helper and one well-formed op per opcode.
#include "op_check_cases.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "tests/cmocka_cpp.h"

#include <string.h>

void expect(Case& c, remat_status want, std::initializer_list<const char*> parts) {
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

void unary(Case& c) { c.in(F32, {2, 3}).out(F32, {2, 3}); }
void binary(Case& c) { c.in(F32, {2, 3}).in(F32, {2, 3}).out(F32, {2, 3}); }
void relu_ok(Case& c) { unary(c); }
void gelu_ok(Case& c) { unary(c); }
void tanh_ok(Case& c) { unary(c); }
void sigmoid_ok(Case& c) { unary(c); }
void softmax_ok(Case& c) { unary(c); }
void spill_ok(Case& c) { unary(c); }
void prefetch_ok(Case& c) { unary(c); }
void square_root_ok(Case& c) { unary(c); }
void error_function_ok(Case& c) { unary(c); }
void log_softmax_ok(Case& c) { unary(c); }
void add_ok(Case& c) { binary(c); }
void mul_ok(Case& c) { binary(c); }
void relu_grad_ok(Case& c) { binary(c); }
void gelu_grad_ok(Case& c) { binary(c); }
void tanh_grad_ok(Case& c) { binary(c); }
void sigmoid_grad_ok(Case& c) { binary(c); }
void softmax_grad_ok(Case& c) { binary(c); }
void square_root_grad_ok(Case& c) { binary(c); }
void error_function_grad_ok(Case& c) { binary(c); }
void log_softmax_grad_ok(Case& c) { binary(c); }

void matmul_ok(Case& c) {
  c.in(F32, {2, 3}).in(F32, {3, 4}).in(F32, {4}).out(F32, {2, 4}).ia({0, 0}).fa({1.0f});
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
void dropout_ok(Case& c) {
  unary(c);
  c.ia({7}).fa({0.1f});
}
void dropout_grad_ok(Case& c) { dropout_ok(c); }
void embedding_ok(Case& c) { c.in(I32, {2, 5}).in(F32, {11, 8}).out(F32, {2, 5, 8}); }
void embedding_grad_ok(Case& c) { c.in(F32, {2, 5, 8}).in(I32, {2, 5}).out(F32, {11, 8}); }
void permute_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {4, 2, 3}).ia({3, 2, 3, 4, 2, 0, 1}); }
void copy_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {6, 4}); }
void select_ok(Case& c) { c.in(F32, {2, 3, 4}).out(F32, {2, 4}).ia({1, 2}); }
void select_grad_ok(Case& c) { c.in(F32, {2, 4}).out(F32, {2, 3, 4}).ia({1, 2}); }
void softmax_cross_entropy_ok(Case& c) {
  c.in(F32, {4, 3}).in(I32, {4}).out(F32, {1}).out(F32, {4, 3});
}
void softmax_cross_entropy_grad_ok(Case& c) { c.in(F32, {4, 3}).in(I32, {4}).out(F32, {4, 3}); }
void mse_ok(Case& c) { c.in(F32, {4, 2}).in(F32, {4, 2}).out(F32, {1}); }
void mse_grad_ok(Case& c) { c.in(F32, {4, 2}).in(F32, {4, 2}).out(F32, {4, 2}); }
void sgd_update_ok(Case& c) {
  c.in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4}).out(F32, {3, 4}).out(F32, {3, 4});
  c.fa({0.01f, 0.9f, 0.0f});
}
void adam_update_ok(Case& c) {
  c.in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4}).in(F32, {3, 4});
  c.out(F32, {3, 4}).out(F32, {3, 4}).out(F32, {3, 4});
  c.ia({0}).fa({1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f});
}
void wait_ok(Case& c) { c.in(F32, {2, 3}); }
void finite_check_ok(Case& c) { c.in(F32, {2, 3}); }
// A bucket of three gradients of any shapes, bucket 2.
void allreduce_start_ok(Case& c) { c.in(F32, {4, 3}).in(F32, {3}).in(F32, {2, 2, 2}).ia({2}); }
void allreduce_wait_ok(Case& c) { allreduce_start_ok(c); }
void scale_ok(Case& c) {
  unary(c);
  c.fa({0.5f});
}

// A 3x3 convolution of 4 to 6 channels in 2 groups, stride 1, padding 1: y keeps 8x8. At unit
// stride no op has a workspace.
void conv_ok(Case& c) {
  c.in(F32, {2, 4, 8, 8}).in(F32, {6, 2, 3, 3}).in(F32, {6});
  c.out(F32, {2, 6, 8, 8}).ia({1, 1, 1, 1, 1, 1, 2});
}
void conv_grad_input_ok(Case& c) {
  c.in(F32, {2, 6, 8, 8}).in(F32, {6, 2, 3, 3});
  c.out(F32, {2, 4, 8, 8}).ia({1, 1, 1, 1, 1, 1, 2});
}
void conv_grad_weight_ok(Case& c) {
  c.in(F32, {2, 6, 8, 8}).in(F32, {2, 4, 8, 8});
  c.out(F32, {6, 2, 3, 3}).ia({1, 1, 1, 1, 1, 1, 2});
}
void channel_sum_ok(Case& c) { c.in(F32, {2, 6, 8, 8}).out(F32, {6}); }
// 3x3 windows, stride 2, padding 1 over 7x7: (7 + 2 - 3) / 2 + 1 = 4.
void max_pool_ok(Case& c) {
  c.in(F32, {2, 3, 7, 7}).out(F32, {2, 3, 4, 4}).ia({3, 3, 2, 2, 1, 1, 0});
}
void max_pool_grad_ok(Case& c) {
  c.in(F32, {2, 3, 4, 4}).in(F32, {2, 3, 7, 7}).out(F32, {2, 3, 7, 7}).ia({3, 3, 2, 2, 1, 1, 0});
}
void avg_pool_ok(Case& c) {
  c.in(F32, {2, 3, 7, 7}).out(F32, {2, 3, 4, 4}).ia({3, 3, 2, 2, 1, 1, 0, 1});
}
void avg_pool_grad_ok(Case& c) {
  c.in(F32, {2, 3, 4, 4}).out(F32, {2, 3, 7, 7}).ia({3, 3, 2, 2, 1, 1, 0, 1});
}
void global_avg_pool_ok(Case& c) { c.in(F32, {2, 3, 4, 5}).out(F32, {2, 3}); }
void global_avg_pool_grad_ok(Case& c) { c.in(F32, {2, 3}).out(F32, {2, 3, 4, 5}); }
void batch_norm_ok(Case& c) {
  c.in(F32, {4, 3, 5, 5}).in(F32, {3}).in(F32, {3});
  c.out(F32, {4, 3, 5, 5}).out(F32, {3}).out(F32, {3}).fa({1e-5f});
}
void batch_norm_grad_ok(Case& c) {
  c.in(F32, {4, 3, 5, 5}).in(F32, {4, 3, 5, 5}).in(F32, {3}).in(F32, {3}).in(F32, {3});
  c.out(F32, {4, 3, 5, 5}).out(F32, {3}).out(F32, {3}).fa({1e-5f});
}
void batch_norm_inference_ok(Case& c) {
  c.in(F32, {4, 3, 5, 5}).in(F32, {3}).in(F32, {3}).in(F32, {3}).in(F32, {3});
  c.out(F32, {4, 3, 5, 5}).fa({1e-5f});
}
void running_stat_update_ok(Case& c) { c.in(F32, {3}).in(F32, {3}).out(F32, {3}).fa({0.1f, 1.0f}); }
// top 1, bottom 2, left 3, right 0.
void pad_ok(Case& c) { c.in(F32, {2, 3, 4, 5}).out(F32, {2, 3, 7, 8}).ia({1, 2, 3, 0}).fa({0.0f}); }
void pad_grad_ok(Case& c) { c.in(F32, {2, 3, 7, 8}).out(F32, {2, 3, 4, 5}).ia({1, 2, 3, 0}); }
void concat_ok(Case& c) {
  c.in(F32, {2, 3, 4}).in(F32, {2, 5, 4}).in(F32, {2, 1, 4}).out(F32, {2, 9, 4}).ia({1});
}
void slice_ok(Case& c) { c.in(F32, {2, 9, 4}).out(F32, {2, 5, 4}).ia({1, 3}); }
void increment_ok(Case& c) { c.in(I64, {1}).out(I64, {1}); }
void pow_scalar_ok(Case& c) {
  unary(c);
  c.fa({2.0f});
}
void pow_scalar_grad_ok(Case& c) {
  binary(c);
  c.fa({2.0f});
}
void leaky_relu_ok(Case& c) {
  unary(c);
  c.fa({0.01f});
}
void leaky_relu_grad_ok(Case& c) {
  binary(c);
  c.fa({0.01f});
}
void clip_ok(Case& c) {
  unary(c);
  c.fa({0.0f, 6.0f});
}
void clip_grad_ok(Case& c) {
  binary(c);
  c.fa({0.0f, 6.0f});
}
void hard_sigmoid_ok(Case& c) {
  unary(c);
  c.fa({1.0f / 6.0f, 0.5f});
}
void hard_sigmoid_grad_ok(Case& c) {
  binary(c);
  c.fa({1.0f / 6.0f, 0.5f});
}
void reduce_sum_ok(Case& c) { c.in(F32, {2, 3, 4, 5}).out(F32, {2, 1, 5}).ia({1, 2, 1}); }
void broadcast_ok(Case& c) { c.in(F32, {2, 5}).out(F32, {2, 3, 4, 5}).ia({1, 2, 0}); }
void fill_ok(Case& c) { c.out(F32, {1}).fa({1.0f}); }
// Scores of 2 heads: q and k interleaved [B 2, S 3, 2 x D 4], C [2, 2, 3, 3].
void head_matmul_ok(Case& c) {
  c.in(F32, {2, 3, 8}).in(F32, {2, 3, 8}).out(F32, {2, 2, 3, 3}).ia({0, 1, 2, 3}).fa({0.5f});
}
// Fused attention of 2 heads: q [B 2, Sq 3, 2 x D 4], k [2, Sk 5, 8], v [2, 5, 2 x Dv 3], a mask
// [Sq, Sk]; context [2, 3, 6], lse [B, heads, Sq].
void attention_ok(Case& c) {
  c.in(F32, {2, 3, 8}).in(F32, {2, 5, 8}).in(F32, {2, 5, 6}).in(F32, {3, 5});
  c.out(F32, {2, 3, 6}).out(F32, {2, 2, 3}).ia({2, 7}).fa({0.5f, 0.1f});
}
// Its gradient: dcontext, q, k, v, context, lse, mask in; dq, dk, dv out.
void attention_grad_ok(Case& c) {
  c.in(F32, {2, 3, 6}).in(F32, {2, 3, 8}).in(F32, {2, 5, 8}).in(F32, {2, 5, 6});
  c.in(F32, {2, 3, 6}).in(F32, {2, 2, 3}).in(F32, {3, 5});
  c.out(F32, {2, 3, 8}).out(F32, {2, 5, 8}).out(F32, {2, 5, 6}).ia({2, 7}).fa({0.5f, 0.1f});
}

namespace {

using Builder = void (*)(Case&);

// Every opcode's well-formed case, set by opcode (not by position in a list).
struct Builders {
  Builder fn[kCount];
};

constexpr Builders make_builders() {
  Builders t{};
#define REMAT_OP_CHECK_CASE_ENTRY(Name, snake, code, ...) t.fn[code] = snake##_ok;
  REMAT_OP_CATALOGUE(REMAT_OP_CHECK_CASE_ENTRY)
#undef REMAT_OP_CHECK_CASE_ENTRY
  return t;
}

constexpr Builders kWellFormed = make_builders();

constexpr bool every_opcode_has_a_case() {
  for (uint16_t code = 1; code < kCount; ++code) {
    if (kWellFormed.fn[code] == nullptr) return false;
  }
  return true;
}
static_assert(every_opcode_has_a_case(), "an op of the catalogue has no well-formed case here");

}  // namespace

void build(Case& c) { kWellFormed.fn[c.code](c); }
