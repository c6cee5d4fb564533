// Internal to plan/op_check*.cc: the op under check and its failure-message builder.
// Shared by the generic checks and check_op (op_check.cc) and the per-op rules
// (op_check_rules.cc); nothing outside those two files includes it.
#ifndef REMAT_PLAN_OP_CHECK_INTERNAL_H_
#define REMAT_PLAN_OP_CHECK_INTERNAL_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan/numeric_message.h"
#include "plan/op_attrs.h"
#include "plan/op_check.h"
#include "plan/ops.h"

namespace remat {
namespace op_check_internal {

/// One tensor of the op being checked.
struct Slot {
  bool output;
  uint32_t index;
};
constexpr Slot In(uint32_t i) { return {false, i}; }
constexpr Slot Out(uint32_t i) { return {true, i}; }

/// The op under check; tensor accessors are valid once the counts and shapes have been checked.
struct Op {
  uint16_t code;
  const char* name;
  const OpInfo* info;  // Null for an unknown opcode: then no tensor or attribute has a name.
  const ShapeView* in;
  uint32_t num_in;
  const ShapeView* out;
  uint32_t num_out;
  const int64_t* iattrs;
  uint32_t num_iattrs;
  const float* fattrs;
  uint32_t num_fattrs;
  char* message;  // Null, or |capacity| bytes of which |length| hold the message.
  size_t capacity;
  size_t length;
  int64_t numel_in[kMaxOpInputs];  // Element counts, set as each tensor's shape is checked.
  int64_t numel_out[kMaxOpOutputs];

  const ShapeView& view(Slot s) const { return s.output ? out[s.index] : in[s.index]; }
  int64_t numel(Slot s) const { return s.output ? numel_out[s.index] : numel_in[s.index]; }
  int rank(Slot s) const { return view(s).rank; }
  // Dim |i| of |s|; a negative |i| counts from the innermost (-1 is the last dim).
  int64_t dim(Slot s, int i) const { return view(s).dims[i < 0 ? rank(s) + i : i]; }
  int64_t rows(Slot s) const { return numel(s) / dim(s, -1); }
  // Attribute |a| (attr::OP::NAME) of this op, which the arity check has counted.
  int64_t attr(IntAttr a) const { return iattrs[a.index]; }
  float attr(FloatAttr a) const { return fattrs[a.index]; }
};

/// Returns the name of remat_dtype value |dtype| ("f32", ...), or "unknown", for messages.
inline const char* dtype_name(uint8_t dtype) {
  const char* const names[] = {"f32", "f16", "bf16", "i32", "i64"};  // remat_dtype order.
  return dtype <= REMAT_DTYPE_I64 ? names[dtype] : "unknown";
}

/// Builds a failure's message in the op's buffer piece by piece, then converts to its status.
/// Pieces are appended with snprintf, which truncates and never allocates for these formats.
class Failure {
 public:
  Failure(Op* op, remat_status status) : op_(op), status_(status) {
    op_->length = 0;
    text(op_->name).text(": ");
  }
  Failure& text(const char* s) { return append("%s", s); }
  Failure& num(int64_t v) { return append("%lld", static_cast<long long>(v)); }
  Failure& real(float v) { return append("%g", static_cast<double>(v)); }
  Failure& dims(Slot s) {
    const ShapeView& v = op_->view(s);
    text("[");
    if (v.dims != nullptr && v.rank <= REMAT_MAX_RANK) {
      for (int i = 0; i < v.rank; ++i) text(i ? ", " : "").num(v.dims[i]);
    }
    return text("]");
  }
  Failure& tensor(Slot s) {
    const OpInfo* info = op_->info;
    const uint32_t count = info == nullptr ? 0 : s.output ? info->max_outputs : info->max_inputs;
    const char* name = s.index >= count ? nullptr
                       : s.output       ? info->output_names[s.index]
                                        : info->input_names[s.index];
    append("%s %u", s.output ? "output" : "input", static_cast<unsigned>(s.index));
    return name ? append(" (%s)", name) : *this;
  }
  // "iattr 2 (d_1)": the variable list (kPermute's) is named by r, which the arity check has
  // bounded.
  Failure& iattr(uint32_t i) {
    append("iattr %u", static_cast<unsigned>(i));
    if (op_->info != nullptr && op_->info->num_iattrs == kVariableAttrs) {
      const int64_t r = op_->iattrs[attr::permute::rank.index];
      if (i == attr::permute::rank.index) return text(" (r)");
      const uint32_t p0 = attr::permute::perm(r, 0);
      return i < p0 ? append(" (d_%u)", static_cast<unsigned>(i - attr::permute::dim(0)))
                    : append(" (p_%u)", static_cast<unsigned>(i - p0));
    }
    return op_->info ? name_of(i, op_->info->iattr_names, op_->info->num_iattrs) : *this;
  }
  Failure& fattr(uint32_t i) {
    append("fattr %u", static_cast<unsigned>(i));
    return op_->info ? name_of(i, op_->info->fattr_names, op_->info->num_fattrs) : *this;
  }
  Failure& iattr(IntAttr a) { return iattr(a.index); }
  Failure& fattr(FloatAttr a) { return fattr(a.index); }
  Failure& has_dims(Slot s) { return tensor(s).text(" has dims ").dims(s); }
  Failure& has_numel(Slot s) {
    return has_dims(s).text(" (").num(op_->numel(s)).text(" elements)");
  }
  operator remat_status() const { return status_; }

 private:
  // " (name)" of attribute |i| when the catalogue names it.
  // The name of entry |i| of an OpInfo name list of |count| entries, where it has one.
  Failure& name_of(uint32_t i, const char* const* names, uint32_t count) {
    return i < count && names[i] ? append(" (%s)", names[i]) : *this;
  }
  Failure& append(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    // Without messages (numeric_message.h) the op's message stays empty: the caller's own
    // numeric message names the op.
    if (!REMAT_MESSAGES || op_->message == nullptr || op_->capacity == 0) return *this;
    va_list args;
    va_start(args, format);
    const int n = vsnprintf(op_->message + op_->length, op_->capacity - op_->length, format, args);
    va_end(args);
    if (n > 0) {
      const size_t room = op_->capacity - 1 - op_->length;
      op_->length += static_cast<size_t>(n) < room ? static_cast<size_t>(n) : room;
    }
    return *this;
  }

  Op* op_;
  remat_status status_;
};

/// Starts a failure of |op| with |status|; the message is then built on the result.
inline Failure fail(Op& op, remat_status status) { return Failure(&op, status); }
/// Starts a REMAT_ERROR_BAD_SHAPE failure of |op|.
inline Failure bad_shape(Op& op) { return Failure(&op, REMAT_ERROR_BAD_SHAPE); }

/// Returns the status of |expr| from the enclosing function unless it is REMAT_OK.
#define RETURN_IF_FAILED(expr)               \
  do {                                       \
    const remat_status status_ = (expr);     \
    if (status_ != REMAT_OK) return status_; \
  } while (0)

// ---- Shape relations shared by the rules (op_check_rules.cc); each returns REMAT_OK or a
// REMAT_ERROR_BAD_SHAPE failure naming the tensor or attribute and what was expected.

/// |s| has as many elements as |ref|.
remat_status same_numel(Op& op, Slot s, Slot ref);
/// |s| has |ref|'s element count and last dim.
remat_status same_rows(Op& op, Slot s, Slot ref);
/// |s| has |ref|'s dims.
remat_status same_dims(Op& op, Slot s, Slot ref);
/// |s| has |expected| elements, named |what| and derived from |from|.
remat_status numel_is(Op& op, Slot s, int64_t expected, const char* what, Slot from);
/// |s| has one element.
remat_status is_scalar(Op& op, Slot s);
/// |s| has rank |rank|.
remat_status rank_is(Op& op, Slot s, int rank);
/// |part|'s dims equal the innermost dims of |whole|.
remat_status trailing_dims_of(Op& op, Slot part, Slot whole);
/// Int attribute |a| is 0 or 1.
remat_status flag_01(Op& op, IntAttr a);
/// Float attribute |a| lies in [lo, hi) (|open_lo|: in (lo, hi)); values are already finite.
remat_status fattr_in(Op& op, FloatAttr a, float lo, bool open_lo, float hi);

// ---- The rules of the spatial ops (op_check_spatial.cc), named by the catalogue's rule column.
remat_status rule_conv(Op& op);
remat_status rule_conv_grad_input(Op& op);
remat_status rule_conv_grad_weight(Op& op);
remat_status rule_channel_sum(Op& op);
remat_status rule_max_pool(Op& op);
remat_status rule_max_pool_grad(Op& op);
remat_status rule_avg_pool(Op& op);
remat_status rule_avg_pool_grad(Op& op);
remat_status rule_global_avg_pool(Op& op);
remat_status rule_global_avg_pool_grad(Op& op);
remat_status rule_batch_norm(Op& op);
remat_status rule_batch_norm_grad(Op& op);
remat_status rule_batch_norm_inference(Op& op);
remat_status rule_running_stat_update(Op& op);
remat_status rule_pad(Op& op);
remat_status rule_pad_grad(Op& op);
remat_status rule_concat(Op& op);
remat_status rule_slice(Op& op);
remat_status rule_increment(Op& op);
remat_status rule_attention(Op& op);
remat_status rule_attention_grad(Op& op);

/// Checks the attribute values and shape relations particular to |op|'s opcode (the last step
/// of check_op); |op|'s pointers, counts, tensors and dtypes must have been checked already.
/// Returns REMAT_OK or the first failure, whose message is written to |op|'s buffer.
remat_status check_relations(Op& op);

}  // namespace op_check_internal
}  // namespace remat

#endif  // REMAT_PLAN_OP_CHECK_INTERNAL_H_
