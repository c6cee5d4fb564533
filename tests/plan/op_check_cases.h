// Shared by the op_check suites: an op under test (Case), the expectation helper, and one
// well-formed case per opcode with loops over every op and every tensor slot.
#ifndef REMAT_TESTS_PLAN_OP_CHECK_CASES_H_
#define REMAT_TESTS_PLAN_OP_CHECK_CASES_H_

#include <stdint.h>
#include <stdio.h>

#include <initializer_list>

#include "plan/op_check.h"
#include "plan/ops.h"

constexpr uint8_t F32 = REMAT_DTYPE_F32;
constexpr uint8_t F16 = REMAT_DTYPE_F16;
constexpr uint8_t BF16 = REMAT_DTYPE_BF16;
constexpr uint8_t I32 = REMAT_DTYPE_I32;
constexpr uint8_t I64 = REMAT_DTYPE_I64;
constexpr uint16_t kCount = remat::kOpCodeCount;
constexpr int64_t k2p20 = int64_t{1} << 20;
constexpr int64_t k2p32 = int64_t{1} << 32;
constexpr int64_t k2p40 = int64_t{1} << 40;

/// One op under test. It owns its tensors' dims and its attributes, so the views stay valid
/// while it lives; it is not copyable for that reason.
struct Case {
  static constexpr uint32_t kSlots = 8;
  static constexpr int kDims = 8;

  explicit Case(uint16_t op) : code(op) {
    for (uint32_t i = 0; i < kSlots; ++i) {
      inputs[i].dims = in_dims[i];
      outputs[i].dims = out_dims[i];
    }
  }
  explicit Case(remat::OpCode op) : Case(static_cast<uint16_t>(op)) {}
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
  remat::ShapeView& view(bool output, uint32_t i) { return output ? outputs[i] : inputs[i]; }
  int64_t* dims_of(bool output, uint32_t i) { return output ? out_dims[i] : in_dims[i]; }

  remat_status run() {
    return remat::check_op(code, inputs, num_in, outputs, num_out, iattrs, num_iattrs, fattrs,
                           num_fattrs, message, sizeof(message));
  }

  uint16_t code;
  remat::ShapeView inputs[kSlots] = {};
  remat::ShapeView outputs[kSlots] = {};
  int64_t in_dims[kSlots][kDims] = {};
  int64_t out_dims[kSlots][kDims] = {};
  uint32_t num_in = 0, num_out = 0;
  int64_t iattrs[16] = {};
  float fattrs[8] = {};
  uint32_t num_iattrs = 0, num_fattrs = 0;
  char message[256] = {};

 private:
  static remat::ShapeView& set(remat::ShapeView* v, int64_t* storage,
                               std::initializer_list<int64_t> dims) {
    int n = 0;
    for (int64_t d : dims) storage[n++] = d;
    v->rank = static_cast<uint8_t>(n);
    v->dims = storage;
    return *v;
  }
};

/// Runs |c| and asserts status |want| and, on failure, a message that names the op and holds
/// every string of |parts|.
void expect(Case& c, remat_status want, std::initializer_list<const char*> parts = {});

/// The elementwise shapes (f32 [2, 3] in and out) many ops' cases share.
void unary(Case& c);
void binary(Case& c);

/// <op>_ok, one per entry of the op catalogue, fills |c|, built with its opcode and nothing
/// else, with a well-formed op of that opcode (op_check_cases.cc): an op added to the
/// catalogue without its case here does not link. The spatial ops (conv to slice) have NCHW
/// shapes, conv with bias and workspace, concat of 3; increment its i64 [1] counter.
#define REMAT_OP_CHECK_CASE_DECLARE(Name, snake, ...) void snake##_ok(Case& c);
REMAT_OP_CATALOGUE(REMAT_OP_CHECK_CASE_DECLARE)
#undef REMAT_OP_CHECK_CASE_DECLARE

/// Fills |c| with the well-formed case of its opcode, which must be 1..kCount-1.
void build(Case& c);

/// Calls |body| with the well-formed case of every opcode, built afresh each time.
template <typename F>
void for_each_op(F body) {
  for (uint16_t code = 1; code < kCount; ++code) {
    Case c(code);
    build(c);
    body(c);
  }
}

/// Calls |body| once per tensor slot of every op's well-formed case, with a fresh case.
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

#endif  // REMAT_TESTS_PLAN_OP_CHECK_CASES_H_
