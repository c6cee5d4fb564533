// Per-op validation against the op table: arity, dtypes, shapes and attribute values.
//
// Choices the contract leaves open, made once here:
// - Ops that read their tensors as flat arrays (elementwise ops, copy, scale, dropout, mse,
//   spill/prefetch, an optimizer's grad and moments) require equal element counts, not equal
//   dims: the compiler may hand them a reshaped view of the same bytes, and the kernel cannot
//   tell the difference. Ops that work along the last axis (softmax, layernorm, cross-entropy)
//   also require equal last dims, because the row length is part of what they compute.
// - An optimizer's outputs are its inputs (in place), so they must have the inputs' exact dims.
// - Attribute values that decide the attribute or tensor layout (kPermute's r, kSgdUpdate's
//   momentum deciding whether a velocity exists) are arity errors; other bad attribute values
//   are shape errors (remat.h: "attribute values inconsistent with what the op computes").
#include "common/op_check.h"

#include <stdarg.h>
#include <stdio.h>

#include <cmath>

#include "common/ops.h"

namespace remat {
namespace {

constexpr uint32_t kMaxIn = 5;
constexpr uint32_t kMaxOut = 3;

// Names of an op's tensors and attributes as common/ops.h writes them, for messages.
struct OpNames {
  const char* in[kMaxIn];
  const char* out[kMaxOut];
  const char* iattr[2];
  const char* fattr[5];
};

// Indexed by opcode value; order must follow OpCode.
const OpNames kNames[] = {
    {{}, {}, {}, {}},
    {{"A", "B"}, {"C"}, {"trans_a", "trans_b"}, {"alpha"}},
    {{"x", "b"}, {"y"}, {}, {}},
    {{"dy"}, {"db"}, {}, {}},
    {{"a", "b"}, {"c"}, {}, {}},
    {{"a", "b"}, {"c"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"dy", "y"}, {"dx"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"dy", "x"}, {"dx"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"dy", "y"}, {"dx"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"dy", "y"}, {"dx"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"dy", "y"}, {"dx"}, {}, {}},
    {{"x", "gamma", "beta"}, {"y", "mean", "rstd"}, {}, {"eps"}},
    {{"dy", "x", "mean", "rstd", "gamma"}, {"dx", "dgamma", "dbeta"}, {}, {}},
    {{"x"}, {"y"}, {"key"}, {"p"}},
    {{"dy"}, {"dx"}, {"key"}, {"p"}},
    {{"ids", "table"}, {"out"}, {}, {}},
    {{"dy", "ids"}, {"dtable"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"x"}, {"y"}, {}, {}},
    {{"x"}, {"y"}, {"axis", "index"}, {}},
    {{"dy"}, {"dx"}, {"axis", "index"}, {}},
    {{"logits", "labels"}, {"loss", "probs"}, {}, {}},
    {{"probs", "labels"}, {"dlogits"}, {}, {}},
    {{"pred", "target"}, {"loss"}, {}, {}},
    {{"pred", "target"}, {"dpred"}, {}, {}},
    {{"param", "grad", "velocity"}, {"param", "velocity"}, {}, {"lr", "momentum", "weight_decay"}},
    {{"param", "grad", "m", "v"}, {"param", "m", "v"}, {"decoupled"}, {"lr", "b1", "b2", "eps",
                                                                       "weight_decay"}},
    {{"x"}, {"slot"}, {}, {}},
    {{"slot"}, {"x"}, {}, {}},
    {{"x"}, {}, {}, {}},
    {{"x"}, {"y"}, {}, {"alpha"}},
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(OpCode::kCount),
              "name table and OpCode disagree");

// One tensor of the op being checked.
struct Slot {
  bool output;
  uint32_t index;
};
constexpr Slot In(uint32_t i) { return {false, i}; }
constexpr Slot Out(uint32_t i) { return {true, i}; }

// The op under check; tensor accessors are valid once the counts and shapes have been checked.
struct Op {
  uint16_t code;
  const char* name;
  const OpNames* names;
  const ShapeView* in;
  uint32_t num_in;
  const ShapeView* out;
  uint32_t num_out;
  const int64_t* iattrs;
  uint32_t num_iattrs;
  const float* fattrs;
  uint32_t num_fattrs;
  char* message;             // Null, or |capacity| bytes of which |length| hold the message.
  size_t capacity;
  size_t length;
  int64_t numel_in[kMaxIn];  // Element counts, set as each tensor's shape is checked.
  int64_t numel_out[kMaxOut];

  const ShapeView& view(Slot s) const { return s.output ? out[s.index] : in[s.index]; }
  int64_t numel(Slot s) const { return s.output ? numel_out[s.index] : numel_in[s.index]; }
  int rank(Slot s) const { return view(s).rank; }
  // Dim |i| of |s|; a negative |i| counts from the innermost (-1 is the last dim).
  int64_t dim(Slot s, int i) const { return view(s).dims[i < 0 ? rank(s) + i : i]; }
  int64_t rows(Slot s) const { return numel(s) / dim(s, -1); }
};

const char* dtype_name(uint8_t dtype) {
  const char* const names[] = {"f32", "f16", "bf16", "i32"};  // remat_dtype order.
  return dtype <= REMAT_DTYPE_I32 ? names[dtype] : "unknown";
}

// Builds a failure's message in the op's buffer piece by piece, then converts to its status.
// Pieces are appended with snprintf, which truncates and never allocates for these formats.
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
    const char* name = s.output ? op_->names->out[s.index] : op_->names->in[s.index];
    append("%s %u", s.output ? "output" : "input", s.index);
    return name ? append(" (%s)", name) : *this;
  }
  // "iattr 2 (d_1)": kPermute's names depend on r, which the arity check has bounded.
  Failure& iattr(uint32_t i) {
    append("iattr %u", i);
    if (op_->code == static_cast<uint16_t>(OpCode::kPermute)) {
      const int64_t r = op_->iattrs[0];
      if (i == 0) return text(" (r)");
      return i <= r ? append(" (d_%u)", i - 1)
                    : append(" (p_%u)", static_cast<unsigned>(i - 1 - r));
    }
    return i < 2 && op_->names->iattr[i] ? append(" (%s)", op_->names->iattr[i]) : *this;
  }
  Failure& fattr(uint32_t i) {
    append("fattr %u", i);
    return i < 5 && op_->names->fattr[i] ? append(" (%s)", op_->names->fattr[i]) : *this;
  }
  Failure& has_dims(Slot s) { return tensor(s).text(" has dims ").dims(s); }
  Failure& has_numel(Slot s) {
    return has_dims(s).text(" (").num(op_->numel(s)).text(" elements)");
  }
  operator remat_status() const { return status_; }

 private:
  Failure& append(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    if (op_->message == nullptr || op_->capacity == 0) return *this;
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

Failure fail(Op& op, remat_status status) { return Failure(&op, status); }
Failure bad_shape(Op& op) { return Failure(&op, REMAT_ERROR_BAD_SHAPE); }

#define RETURN_IF_FAILED(expr) \
  do { const remat_status status_ = (expr); if (status_ != REMAT_OK) return status_; } while (0)

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
  if (op.code != static_cast<uint16_t>(OpCode::kPermute)) {
    return check_count(op, "iattrs", op.num_iattrs, info.num_iattrs, info.num_iattrs);
  }
  // kPermute: [r, d_0..d_{r-1}, p_0..p_{r-1}].
  if (op.num_iattrs == 0) {
    return fail(op, REMAT_ERROR_BAD_ARITY).text("0 iattrs, expected 1 + 2r with r = 1..6");
  }
  const int64_t r = op.iattrs[0];
  if (r < 1 || r > REMAT_MAX_RANK) {
    return fail(op, REMAT_ERROR_BAD_ARITY).iattr(0).text(" is ").num(r).text(", expected 1..6");
  }
  if (op.num_iattrs != 1 + 2 * r) {
    return fail(op, REMAT_ERROR_BAD_ARITY).num(op.num_iattrs).text(" iattrs, expected 1 + 2r = ")
        .num(1 + 2 * r).text(" for r = ").num(r);
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
  return fail(op, REMAT_ERROR_INVALID_ARGUMENT).text(missing)
      .text(" is null but its count is not 0");
}

remat_status check_fattrs_finite(Op& op) {
  for (uint32_t i = 0; i < op.num_fattrs; ++i) {
    if (!std::isfinite(op.fattrs[i])) {
      return bad_shape(op).fattr(i).text(" is ").real(op.fattrs[i])
          .text(", expected a finite value");
    }
  }
  return REMAT_OK;
}

// kSgdUpdate's momentum decides whether the velocity tensor exists (ops.h: "v unused").
remat_status check_sgd_velocity(Op& op) {
  const float momentum = op.fattrs[1];
  const bool velocity = momentum != 0.0f;
  if (op.num_in == (velocity ? 3u : 2u) && op.num_out == (velocity ? 2u : 1u)) return REMAT_OK;
  return fail(op, REMAT_ERROR_BAD_ARITY).fattr(1).text(" is ").real(momentum)
      .text(velocity ? ", which needs input 2 and output 1 (velocity)"
                     : ", which takes no velocity input or output")
      .text("; found ").num(op.num_in).text(" inputs and ").num(op.num_out).text(" outputs");
}

// Rank 1..6, every dim >= 1, element count <= kMaxTensorElements; records the count.
remat_status check_tensor(Op& op, Slot s) {
  const ShapeView& v = op.view(s);
  if (v.rank < 1 || v.rank > REMAT_MAX_RANK) {
    return bad_shape(op).tensor(s).text(" has rank ").num(v.rank).text(", expected 1..6");
  }
  if (v.dims == nullptr) {
    return fail(op, REMAT_ERROR_INVALID_ARGUMENT).tensor(s).text(" has rank ").num(v.rank)
        .text(" but null dims");
  }
  int64_t numel = 1;
  for (int i = 0; i < v.rank; ++i) {
    const int64_t d = v.dims[i];
    if (d < 1) {
      return bad_shape(op).has_dims(s).text(": dim ").num(i).text(" is ").num(d)
          .text(", expected >= 1");
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

enum class Want { kF32, kI32, kAny };

// f32 everywhere except token ids and class labels; copies between regions move any dtype.
Want wanted_dtype(uint16_t code, Slot s) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kEmbedding: return !s.output && s.index == 0 ? Want::kI32 : Want::kF32;
    case OpCode::kEmbeddingGrad:
    case OpCode::kSoftmaxCrossEntropy:
    case OpCode::kSoftmaxCrossEntropyGrad:
      return !s.output && s.index == 1 ? Want::kI32 : Want::kF32;
    case OpCode::kSpill:
    case OpCode::kPrefetch:
    case OpCode::kWait: return Want::kAny;
    default:
      return Want::kF32;
  }
}

remat_status check_dtype(Op& op, Slot s) {
  const uint8_t dtype = op.view(s).dtype;
  const Want want = wanted_dtype(op.code, s);
  if (want == Want::kAny ? dtype <= REMAT_DTYPE_I32
                         : dtype == (want == Want::kI32 ? REMAT_DTYPE_I32 : REMAT_DTYPE_F32)) {
    return REMAT_OK;
  }
  return fail(op, REMAT_ERROR_BAD_DTYPE).tensor(s).text(" has dtype ").text(dtype_name(dtype))
      .text(" (").num(dtype).text("), expected ")
      .text(want == Want::kAny ? "f32, f16, bf16 or i32" : want == Want::kI32 ? "i32" : "f32");
}

// ---- Shape relations shared by many ops --------------------------------------------------------

remat_status same_numel(Op& op, Slot s, Slot ref) {
  if (op.numel(s) == op.numel(ref)) return REMAT_OK;
  return bad_shape(op).has_numel(s).text(", expected ").num(op.numel(ref)).text(" elements as ")
      .tensor(ref).text(" ").dims(ref);
}

// Same element count and same row length: for ops that work along the last axis.
remat_status same_rows(Op& op, Slot s, Slot ref) {
  RETURN_IF_FAILED(same_numel(op, s, ref));
  if (op.dim(s, -1) == op.dim(ref, -1)) return REMAT_OK;
  return bad_shape(op).has_dims(s).text(", expected last dim ").num(op.dim(ref, -1)).text(" as ")
      .tensor(ref).text(" ").dims(ref);
}

remat_status same_dims(Op& op, Slot s, Slot ref) {
  bool equal = op.rank(s) == op.rank(ref);
  for (int i = 0; equal && i < op.rank(s); ++i) equal = op.dim(s, i) == op.dim(ref, i);
  if (equal) return REMAT_OK;
  return bad_shape(op).has_dims(s).text(", expected ").dims(ref).text(" as ").tensor(ref);
}

// |s| has |expected| elements, named |what| and derived from |from|.
remat_status numel_is(Op& op, Slot s, int64_t expected, const char* what, Slot from) {
  if (op.numel(s) == expected) return REMAT_OK;
  return bad_shape(op).has_numel(s).text(", expected ").text(what).text(" = ").num(expected)
      .text(" from ").tensor(from).text(" ").dims(from);
}

remat_status is_scalar(Op& op, Slot s) {
  if (op.numel(s) == 1) return REMAT_OK;
  return bad_shape(op).has_numel(s).text(", expected 1 element (a scalar)");
}

remat_status rank_is(Op& op, Slot s, int rank) {
  if (op.rank(s) == rank) return REMAT_OK;
  return bad_shape(op).has_dims(s).text(": rank ").num(op.rank(s)).text(", expected ").num(rank);
}

// |part|'s dims equal the innermost dims of |whole| (a bias, a reduced gradient).
remat_status trailing_dims_of(Op& op, Slot part, Slot whole) {
  const int skip = op.rank(whole) - op.rank(part);
  bool equal = skip >= 0;
  for (int i = 0; equal && i < op.rank(part); ++i) {
    equal = op.dim(part, i) == op.dim(whole, skip + i);
  }
  if (equal) return REMAT_OK;
  return bad_shape(op).has_dims(part).text(", expected trailing dims of ").tensor(whole).text(" ")
      .dims(whole);
}

// Every tensor has input 0's element count.
remat_status all_same_numel(Op& op) {
  for (uint32_t i = 1; i < op.num_in; ++i) RETURN_IF_FAILED(same_numel(op, In(i), In(0)));
  for (uint32_t i = 0; i < op.num_out; ++i) RETURN_IF_FAILED(same_numel(op, Out(i), In(0)));
  return REMAT_OK;
}

remat_status all_same_rows(Op& op) {
  for (uint32_t i = 1; i < op.num_in; ++i) RETURN_IF_FAILED(same_rows(op, In(i), In(0)));
  for (uint32_t i = 0; i < op.num_out; ++i) RETURN_IF_FAILED(same_rows(op, Out(i), In(0)));
  return REMAT_OK;
}

remat_status flag_01(Op& op, uint32_t i) {
  if (op.iattrs[i] == 0 || op.iattrs[i] == 1) return REMAT_OK;
  return bad_shape(op).iattr(i).text(" is ").num(op.iattrs[i]).text(", expected 0 or 1");
}

// fattr |i| lies in [lo, hi) (|open_lo|: in (lo, hi)); values are already finite.
remat_status fattr_in(Op& op, uint32_t i, float lo, bool open_lo, float hi) {
  const float v = op.fattrs[i];
  if ((open_lo ? v > lo : v >= lo) && v < hi) return REMAT_OK;
  Failure f = bad_shape(op).fattr(i).text(" is ").real(v).text(", expected ");
  return hi == INFINITY ? f.text("> ").real(lo)
                        : f.text(open_lo ? "in (" : "in [").real(lo).text(", ").real(hi).text(")");
}

// ---- Per-op relations --------------------------------------------------------------------------

remat_status check_matmul(Op& op) {
  RETURN_IF_FAILED(flag_01(op, 0));
  RETURN_IF_FAILED(flag_01(op, 1));
  const Slot a = In(0), b = In(1), c = Out(0);
  const Slot matrices[] = {a, b, c};
  for (Slot s : matrices) {
    if (op.rank(s) < 2) {
      return bad_shape(op).has_dims(s).text(": rank ").num(op.rank(s))
          .text(", expected at least 2 (a matrix)");
    }
  }
  const bool ta = op.iattrs[0] != 0, tb = op.iattrs[1] != 0;
  const int64_t m = op.dim(a, ta ? -1 : -2), k = op.dim(a, ta ? -2 : -1);
  const int64_t kb = op.dim(b, tb ? -1 : -2), n = op.dim(b, tb ? -2 : -1);
  if (kb != k) {
    return bad_shape(op).has_dims(b).text(tb ? " (trans_b 1)" : "").text(", expected K = ").num(k)
        .text(" from ").tensor(a).text(" ").dims(a).text(ta ? " (trans_a 1)" : "");
  }
  if (op.dim(c, -2) != m || op.dim(c, -1) != n) {
    return bad_shape(op).has_dims(c).text(", expected a matrix of [M, N] = [").num(m).text(", ")
        .num(n).text("]");
  }
  // Two dims multiply to at most the element count, checked <= 2^40: no overflow.
  const int64_t ba = op.numel(a) / (op.dim(a, -1) * op.dim(a, -2));
  const int64_t bb = op.numel(b) / (op.dim(b, -1) * op.dim(b, -2));
  const int64_t bc = op.numel(c) / (op.dim(c, -1) * op.dim(c, -2));
  const bool batched = ba == bb && bb == bc;
  const bool broadcast = op.rank(b) == 2 && ba == bc;
  const bool reduce = op.rank(c) == 2 && ba == bb && ba > 1;
  if (batched || broadcast || reduce) return REMAT_OK;
  return bad_shape(op).text("batch sizes A ").num(ba).text(", B ").num(bb).text(", C ").num(bc)
      .text(" fit no mode (batched: all equal; broadcast: B rank 2, A's = C's; reduce: C rank 2,"
            " A's = B's > 1)");
}

remat_status check_layernorm(Op& op) {
  const Slot x = In(0);
  const int64_t n = op.dim(x, -1), rows = op.rows(x);
  RETURN_IF_FAILED(same_rows(op, Out(0), x));
  RETURN_IF_FAILED(numel_is(op, In(1), n, "N", x));
  RETURN_IF_FAILED(numel_is(op, In(2), n, "N", x));
  RETURN_IF_FAILED(numel_is(op, Out(1), rows, "rows", x));
  RETURN_IF_FAILED(numel_is(op, Out(2), rows, "rows", x));
  return fattr_in(op, 0, 0.0f, true, INFINITY);
}

remat_status check_layernorm_grad(Op& op) {
  const Slot x = In(1);
  const int64_t n = op.dim(x, -1), rows = op.rows(x);
  RETURN_IF_FAILED(same_rows(op, In(0), x));
  RETURN_IF_FAILED(numel_is(op, In(2), rows, "rows", x));
  RETURN_IF_FAILED(numel_is(op, In(3), rows, "rows", x));
  RETURN_IF_FAILED(numel_is(op, In(4), n, "N", x));
  RETURN_IF_FAILED(same_rows(op, Out(0), x));
  RETURN_IF_FAILED(numel_is(op, Out(1), n, "N", x));
  return numel_is(op, Out(2), n, "N", x);
}

remat_status check_dropout(Op& op) {
  if (op.iattrs[0] < 0) {
    return bad_shape(op).iattr(0).text(" is ").num(op.iattrs[0]).text(", expected >= 0");
  }
  RETURN_IF_FAILED(fattr_in(op, 0, 0.0f, false, 1.0f));
  return all_same_numel(op);
}

// |flat| holds one row of width H (dim 1 of the rank-2 |table|) per id of |ids|.
remat_status check_embedding_rows(Op& op, Slot table, Slot flat, Slot ids) {
  RETURN_IF_FAILED(rank_is(op, table, 2));
  const int64_t h = op.dim(table, 1);
  if (op.dim(flat, -1) != h) {
    return bad_shape(op).has_dims(flat).text(", expected last dim H = ").num(h).text(" from ")
        .tensor(table).text(" ").dims(table);
  }
  // numel(flat) == numel(ids) * H, compared without forming the product.
  if (op.numel(flat) / h == op.numel(ids)) return REMAT_OK;
  return bad_shape(op).has_dims(flat).text(", expected one row of H = ").num(h).text(" per id of ")
      .tensor(ids).text(" ").dims(ids).text(" (").num(op.numel(ids)).text(" rows)");
}

remat_status check_permute(Op& op) {
  const int64_t r = op.iattrs[0];
  const int64_t* d = op.iattrs + 1;
  const int64_t* p = op.iattrs + 1 + r;
  int64_t numel = 1;
  for (int64_t i = 0; i < r; ++i) {
    if (d[i] < 1) {
      return bad_shape(op).iattr(static_cast<uint32_t>(1 + i)).text(" is ").num(d[i])
          .text(", expected >= 1");
    }
    if (d[i] > kMaxTensorElements / numel) {
      return bad_shape(op).text("view dims d have more than 2^40 elements");
    }
    numel *= d[i];
  }
  bool seen[REMAT_MAX_RANK] = {};
  for (int64_t i = 0; i < r; ++i) {
    if (p[i] < 0 || p[i] >= r || seen[p[i]]) {
      return bad_shape(op).iattr(static_cast<uint32_t>(1 + r + i)).text(" is ").num(p[i])
          .text(", expected a permutation of 0..").num(r - 1).text(" (each once)");
    }
    seen[p[i]] = true;
  }
  const Slot views[] = {In(0), Out(0)};
  for (Slot s : views) {
    if (op.numel(s) != numel) {
      return bad_shape(op).has_numel(s).text(", expected ").num(numel)
          .text(" elements, the product of view dims d");
    }
  }
  return REMAT_OK;
}

// kSelect's input and kSelectGrad's output (|full|) have the axis; |part| lacks it.
remat_status check_select(Op& op, Slot full, Slot part) {
  const int64_t axis = op.iattrs[0], index = op.iattrs[1];
  if (axis < 0 || axis >= op.rank(full)) {
    return bad_shape(op).iattr(0).text(" is ").num(axis).text(", expected 0..")
        .num(op.rank(full) - 1).text(" for ").tensor(full).text(" ").dims(full);
  }
  const int64_t n = op.dim(full, static_cast<int>(axis));
  if (index < 0 || index >= n) {
    return bad_shape(op).iattr(1).text(" is ").num(index).text(", expected 0..").num(n - 1)
        .text(" along axis ").num(axis).text(" of ").tensor(full).text(" ").dims(full);
  }
  return numel_is(op, part, op.numel(full) / n, "numel without the axis", full);
}

// Logits or probs of rank 2 [N, C] with N labels.
remat_status check_class_rows(Op& op, Slot scores, Slot labels) {
  RETURN_IF_FAILED(rank_is(op, scores, 2));
  return numel_is(op, labels, op.dim(scores, 0), "N", scores);
}

remat_status check_adam(Op& op) {
  RETURN_IF_FAILED(flag_01(op, 0));
  RETURN_IF_FAILED(fattr_in(op, 1, 0.0f, false, 1.0f));
  RETURN_IF_FAILED(fattr_in(op, 2, 0.0f, false, 1.0f));
  RETURN_IF_FAILED(fattr_in(op, 3, 0.0f, true, INFINITY));
  for (uint32_t i = 1; i < 4; ++i) RETURN_IF_FAILED(same_numel(op, In(i), In(0)));
  RETURN_IF_FAILED(same_dims(op, Out(0), In(0)));
  RETURN_IF_FAILED(same_dims(op, Out(1), In(2)));
  return same_dims(op, Out(2), In(3));
}

remat_status check_relations(Op& op) {
  switch (static_cast<OpCode>(op.code)) {
    case OpCode::kMatMul: return check_matmul(op);
    case OpCode::kBiasAdd:
      RETURN_IF_FAILED(trailing_dims_of(op, In(1), In(0)));
      return same_numel(op, Out(0), In(0));
    case OpCode::kReduceLeading: return trailing_dims_of(op, Out(0), In(0));
    case OpCode::kSoftmax:
    case OpCode::kSoftmaxGrad: return all_same_rows(op);
    case OpCode::kLayerNorm: return check_layernorm(op);
    case OpCode::kLayerNormGrad: return check_layernorm_grad(op);
    case OpCode::kDropout:
    case OpCode::kDropoutGrad: return check_dropout(op);
    case OpCode::kEmbedding: return check_embedding_rows(op, In(1), Out(0), In(0));
    case OpCode::kEmbeddingGrad: return check_embedding_rows(op, Out(0), In(0), In(1));
    case OpCode::kPermute: return check_permute(op);
    case OpCode::kSelect: return check_select(op, In(0), Out(0));
    case OpCode::kSelectGrad: return check_select(op, Out(0), In(0));
    case OpCode::kSoftmaxCrossEntropy:
      RETURN_IF_FAILED(check_class_rows(op, In(0), In(1)));
      RETURN_IF_FAILED(is_scalar(op, Out(0)));
      return same_rows(op, Out(1), In(0));
    case OpCode::kSoftmaxCrossEntropyGrad:
      RETURN_IF_FAILED(check_class_rows(op, In(0), In(1)));
      return same_rows(op, Out(0), In(0));
    case OpCode::kMse:
      RETURN_IF_FAILED(same_numel(op, In(1), In(0)));
      return is_scalar(op, Out(0));
    case OpCode::kSgdUpdate:
      for (uint32_t i = 1; i < op.num_in; ++i) RETURN_IF_FAILED(same_numel(op, In(i), In(0)));
      RETURN_IF_FAILED(same_dims(op, Out(0), In(0)));
      return op.num_out == 2 ? same_dims(op, Out(1), In(2)) : REMAT_OK;
    case OpCode::kAdamUpdate: return check_adam(op);
    case OpCode::kSpill:
    case OpCode::kPrefetch:
      if (op.view(Out(0)).dtype != op.view(In(0)).dtype) {
        return fail(op, REMAT_ERROR_BAD_DTYPE).tensor(Out(0)).text(" has dtype ")
            .text(dtype_name(op.view(Out(0)).dtype)).text(", expected ")
            .text(dtype_name(op.view(In(0)).dtype)).text(" as ").tensor(In(0));
      }
      return same_numel(op, Out(0), In(0));
    case OpCode::kWait: return REMAT_OK;
    default:  // Elementwise ops, copy, scale, mse_grad: flat arrays of one size.
      return all_same_numel(op);
  }
}

}  // namespace

remat_status check_op(uint16_t code, const ShapeView* inputs, uint32_t num_inputs,
                      const ShapeView* outputs, uint32_t num_outputs, const int64_t* iattrs,
                      uint32_t num_iattrs, const float* fattrs, uint32_t num_fattrs,
                      char* message, size_t capacity) {
  if (message != nullptr && capacity > 0) message[0] = '\0';  // The message on success.
  const OpInfo* info = op_info(code);
  Op op = {code, info ? info->name : "op", &kNames[0], inputs, num_inputs, outputs, num_outputs,
           iattrs, num_iattrs, fattrs, num_fattrs, message, capacity, 0, {}, {}};
  if (info == nullptr) {
    return fail(op, REMAT_ERROR_UNKNOWN_OP).text("unknown opcode ").num(code).text(", expected 1..")
        .num(static_cast<int64_t>(OpCode::kCount) - 1);
  }
  op.names = &kNames[code];
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
