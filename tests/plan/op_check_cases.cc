// The shared op_check test cases: the expectation helper and one well-formed op per opcode.
#include "op_check_cases.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
// cmocka 1.1 declares its functions without an extern "C" guard.
extern "C" {
#include <cmocka.h>
}

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

namespace {

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

}  // namespace

void build(Case& c) { kWellFormed[c.code](c); }
