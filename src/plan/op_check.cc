// Per-op validation against the op table: check_op and the checks every op gets (pointers,
// counts, finite attributes, ranks and dims, dtypes); each op's own rules are in op_check_rules.cc.
//
// Choices the contract leaves open, made once here and in op_check_rules.cc:
// - Ops that read their tensors as flat arrays (elementwise ops, copy, scale, dropout, mse,
//   spill/prefetch, an optimizer's grad and moments) require equal element counts, not equal
//   dims: the compiler may hand them a reshaped view of the same bytes, and the kernel cannot
//   tell the difference. Ops that work along the last axis (softmax, layernorm, cross-entropy)
//   also require equal last dims, because the row length is part of what they compute.
// - An optimizer's outputs are its inputs (in place), so they must have the inputs' exact dims.
// - Attribute values that decide the attribute or tensor layout (kPermute's r, kSgdUpdate's
//   momentum deciding whether a velocity exists) are arity errors; other bad attribute values
//   are shape errors (remat.h: "attribute values inconsistent with what the op computes").
#include "plan/op_check.h"

#include <cmath>

#include "plan/op_check_internal.h"
#include "plan/ops.h"

namespace remat {

using namespace op_check_internal;

namespace {

// ---- Generic checks, in the order check_op runs them ------------------------------------------

remat_status check_count(Op& op, const char* what, uint32_t found, uint32_t lo, uint32_t hi) {
  if (found >= lo && found <= hi) return REMAT_OK;
  Failure f = fail(op, REMAT_ERROR_BAD_ARITY);
  f.num(found).text(" ").text(what).text(", expected ").num(lo);
  return hi == lo ? f : f.text("..").num(hi);
}

remat_status check_counts(Op& op, const OpInfo& info) {
  RETURN_IF_FAILED(check_count(op, "inputs", op.num_in, info.min_inputs, info.max_inputs));
  RETURN_IF_FAILED(check_count(op, "outputs", op.num_out, info.min_outputs, info.max_outputs));
  RETURN_IF_FAILED(check_count(op, "fattrs", op.num_fattrs, info.num_fattrs, info.num_fattrs));
  if (info.num_iattrs != kVariableAttrs) {
    return check_count(op, "iattrs", op.num_iattrs, info.min_iattrs, info.num_iattrs);
  }
  // The one op with a variable list, kPermute: [r, d_0..d_{r-1}, p_0..p_{r-1}].
  if (op.num_iattrs == 0) {
    return fail(op, REMAT_ERROR_BAD_ARITY).text("0 iattrs, expected 1 + 2r with r = 1..6");
  }
  const int64_t r = op.attr(attr::permute::rank);
  if (r < 1 || r > REMAT_MAX_RANK) {
    return fail(op, REMAT_ERROR_BAD_ARITY)
        .iattr(attr::permute::rank)
        .text(" is ")
        .num(r)
        .text(", expected 1..6");
  }
  if (op.num_iattrs != 1 + 2 * r) {
    return fail(op, REMAT_ERROR_BAD_ARITY)
        .num(op.num_iattrs)
        .text(" iattrs, expected 1 + 2r = ")
        .num(1 + 2 * r)
        .text(" for r = ")
        .num(r);
  }
  return REMAT_OK;
}

remat_status check_pointers(Op& op) {
  const char* missing = op.num_in && !op.in           ? "inputs"
                        : op.num_out && !op.out       ? "outputs"
                        : op.num_iattrs && !op.iattrs ? "iattrs"
                        : op.num_fattrs && !op.fattrs ? "fattrs"
                                                      : nullptr;
  if (missing == nullptr) return REMAT_OK;
  return fail(op, REMAT_ERROR_INVALID_ARGUMENT)
      .text(missing)
      .text(" is null but its count is not 0");
}

remat_status check_fattrs_finite(Op& op) {
  for (uint32_t i = 0; i < op.num_fattrs; ++i) {
    if (!std::isfinite(op.fattrs[i])) {
      return bad_shape(op)
          .fattr(i)
          .text(" is ")
          .real(op.fattrs[i])
          .text(", expected a finite value");
    }
  }
  return REMAT_OK;
}

// kSgdUpdate's momentum decides whether the velocity tensor exists (ops.h: "v unused").
remat_status check_sgd_velocity(Op& op) {
  const float momentum = op.attr(attr::sgd_update::momentum);
  const bool velocity = momentum != 0.0f;
  if (op.num_in == (velocity ? 3u : 2u) && op.num_out == (velocity ? 2u : 1u)) return REMAT_OK;
  return fail(op, REMAT_ERROR_BAD_ARITY)
      .fattr(attr::sgd_update::momentum)
      .text(" is ")
      .real(momentum)
      .text(velocity ? ", which needs input 2 and output 1 (velocity)"
                     : ", which takes no velocity input or output")
      .text("; found ")
      .num(op.num_in)
      .text(" inputs and ")
      .num(op.num_out)
      .text(" outputs");
}

// Rank 1..6, every dim >= 1, element count <= kMaxTensorElements; records the count.
remat_status check_tensor(Op& op, Slot s) {
  const ShapeView& v = op.view(s);
  if (v.rank < 1 || v.rank > REMAT_MAX_RANK) {
    return bad_shape(op).tensor(s).text(" has rank ").num(v.rank).text(", expected 1..6");
  }
  if (v.dims == nullptr) {
    return fail(op, REMAT_ERROR_INVALID_ARGUMENT)
        .tensor(s)
        .text(" has rank ")
        .num(v.rank)
        .text(" but null dims");
  }
  int64_t numel = 1;
  for (int i = 0; i < v.rank; ++i) {
    const int64_t d = v.dims[i];
    if (d < 1) {
      return bad_shape(op).has_dims(s).text(": dim ").num(i).text(" is ").num(d).text(
          ", expected >= 1");
    }
    // numel * d > limit, tested without forming the product.
    if (d > kMaxTensorElements / numel) {
      return bad_shape(op).has_dims(s).text(": more than 2^40 elements");
    }
    numel *= d;
  }
  (s.output ? op.numel_out : op.numel_in)[s.index] = numel;
  return REMAT_OK;
}

enum class Want { kFloat, kI32, kI64, kAny };

// The catalogue's dtypes column: a float (f32, f16 or bf16, each tensor its own) everywhere
// except token ids and class labels (i32) and counters (i64); copies between regions move any
// dtype (rule_copy_between_regions keeps a copy's dtype).
Want wanted_dtype(const OpInfo& info, Slot s) {
  switch (info.dtypes) {
    case OpDtypes::kI32Input0: return !s.output && s.index == 0 ? Want::kI32 : Want::kFloat;
    case OpDtypes::kI32Input1: return !s.output && s.index == 1 ? Want::kI32 : Want::kFloat;
    case OpDtypes::kAnyDtype: return Want::kAny;
    case OpDtypes::kI64: return Want::kI64;
    case OpDtypes::kF32: break;
  }
  return Want::kFloat;
}

bool accepts(Want want, uint8_t dtype) {
  switch (want) {
    case Want::kFloat:
      return dtype == REMAT_DTYPE_F32 || dtype == REMAT_DTYPE_F16 || dtype == REMAT_DTYPE_BF16;
    case Want::kI32: return dtype == REMAT_DTYPE_I32;
    case Want::kI64: return dtype == REMAT_DTYPE_I64;
    case Want::kAny: break;
  }
  return dtype <= REMAT_DTYPE_I64;
}

remat_status check_dtype(Op& op, Slot s) {
  const uint8_t dtype = op.view(s).dtype;
  const Want want = wanted_dtype(*op.info, s);
  if (accepts(want, dtype)) return REMAT_OK;
  const char* const expected[] = {"f32, f16 or bf16", "i32", "i64", "f32, f16, bf16, i32 or i64"};
  return fail(op, REMAT_ERROR_BAD_DTYPE)
      .tensor(s)
      .text(" has dtype ")
      .text(dtype_name(dtype))
      .text(" (")
      .num(dtype)
      .text("), expected ")
      .text(expected[static_cast<int>(want)]);
}

}  // namespace

remat_status check_op(uint16_t code, const ShapeView* inputs, uint32_t num_inputs,
                      const ShapeView* outputs, uint32_t num_outputs, const int64_t* iattrs,
                      uint32_t num_iattrs, const float* fattrs, uint32_t num_fattrs, char* message,
                      size_t capacity) {
  if (message != nullptr && capacity > 0) message[0] = '\0';  // The message on success.
  const OpInfo* info = op_info(code);
  Op op = {code,        info ? info->name : "op",
           info,        inputs,
           num_inputs,  outputs,
           num_outputs, iattrs,
           num_iattrs,  fattrs,
           num_fattrs,  message,
           capacity,    0,
           {},          {}};
  if (info == nullptr) {
    return fail(op, REMAT_ERROR_UNKNOWN_OP)
        .text("unknown opcode ")
        .num(code)
        .text(", expected 1..")
        .num(static_cast<int64_t>(kOpCodeCount) - 1);
  }
  // No array is read before its pointer is known and its count is bounded by the op table.
  RETURN_IF_FAILED(check_pointers(op));
  RETURN_IF_FAILED(check_counts(op, *info));
  RETURN_IF_FAILED(check_fattrs_finite(op));
  if (code == static_cast<uint16_t>(OpCode::kSgdUpdate)) RETURN_IF_FAILED(check_sgd_velocity(op));
  for (uint32_t i = 0; i < num_inputs; ++i) RETURN_IF_FAILED(check_tensor(op, In(i)));
  for (uint32_t i = 0; i < num_outputs; ++i) RETURN_IF_FAILED(check_tensor(op, Out(i)));
  for (uint32_t i = 0; i < num_inputs; ++i) RETURN_IF_FAILED(check_dtype(op, In(i)));
  for (uint32_t i = 0; i < num_outputs; ++i) RETURN_IF_FAILED(check_dtype(op, Out(i)));
  return check_relations(op);
}

#undef RETURN_IF_FAILED

}  // namespace remat
