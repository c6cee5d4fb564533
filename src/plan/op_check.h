// Per-op validation: arity, dtypes, shapes and attribute values of one op, as ops.h defines
// them. Used by the compiler on graphs it builds and by the runtime on untrusted plans, so it
// is total (never crashes or overflows on any input) and allocates nothing.
#ifndef REMAT_PLAN_OP_CHECK_H_
#define REMAT_PLAN_OP_CHECK_H_

#include <stddef.h>
#include <stdint.h>

#include "remat/remat.h"

namespace remat {

/// Most elements one tensor may have (2^40). Products of dims are checked against it before
/// they are formed, so no element count, byte size or product of two dims overflows int64.
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;

/// A tensor's type and shape as an op check sees it. Nothing is owned: |dims| points at |rank|
/// values that the caller keeps alive during the call.
struct ShapeView {
  uint8_t dtype;        ///< remat_dtype value (any byte is accepted and checked).
  uint8_t rank;         ///< Number of entries of |dims|; a valid tensor has 1..REMAT_MAX_RANK.
  const int64_t* dims;  ///< Shape, outermost first. Read only when |rank| is valid.
};

/// Checks that op |code| with |num_inputs| |inputs|, |num_outputs| |outputs|, |num_iattrs|
/// |iattrs| and |num_fattrs| |fattrs| is well-formed (plan/ops.h). Checks run in a fixed
/// order and the first failure is reported: opcode; counts of tensors and attributes (with the
/// layouts that attribute values decide: kPermute's r, kSgdUpdate's velocity); finiteness of
/// float attributes; each tensor's rank, dims and element count; dtypes; then attribute values
/// and shape relations.
///
/// Returns REMAT_OK, or:
/// - REMAT_ERROR_UNKNOWN_OP when |code| is not an opcode;
/// - REMAT_ERROR_BAD_ARITY when a count of tensors or attributes is wrong;
/// - REMAT_ERROR_BAD_DTYPE when a tensor's dtype is not one the op takes;
/// - REMAT_ERROR_BAD_SHAPE when a shape or an attribute value is inconsistent with the op;
/// - REMAT_ERROR_INVALID_ARGUMENT when an array pointer is null but its count is not zero.
/// When |message| is not null and |capacity| > 0, a message naming the op, the tensor or
/// attribute, the values found and those expected is written there, truncated to |capacity|
/// bytes and always NUL-terminated, e.g. "matmul: input 1 (B) has dims [3, 5], expected K = 4
/// from input 0 (A) [2, 4]"; it is "" on success, and always "" in a build without messages
/// (plan/numeric_message.h), whose callers' numeric messages name the op. The in-place rule of
/// the optimizers (their outputs are their inputs) is the caller's to check on tensor ids; here
/// only shapes are.
remat_status check_op(uint16_t code, const ShapeView* inputs, uint32_t num_inputs,
                      const ShapeView* outputs, uint32_t num_outputs, const int64_t* iattrs,
                      uint32_t num_iattrs, const float* fattrs, uint32_t num_fattrs, char* message,
                      size_t capacity);

}  // namespace remat

#endif  // REMAT_PLAN_OP_CHECK_H_
