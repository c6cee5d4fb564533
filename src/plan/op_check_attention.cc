// Validation rules of fused attention (plan/op_catalogue.h: attention, attention_grad): the
// heads and their widths, batch and sequence lengths shared by q, k, v and the outputs, the
// mask's two accepted shapes, the dropout attributes. (An empty sequence never gets here: every
// dim of every tensor is at least 1, op_check.cc.)
#include <initializer_list>

#include "plan/head_matmul_shape.h"
#include "plan/op_check_internal.h"

namespace remat {
namespace op_check_internal {
namespace {

// The sizes every tensor of the op is checked against, from q, k and v.
struct AttentionShape {
  int64_t batch, sq, sk, heads, d, dv;
};

// |s| is [dim0, dim1, dim2].
remat_status dims_are(Op& op, Slot s, int64_t dim0, int64_t dim1, int64_t dim2,
                      const char* expected, Slot from) {
  RETURN_IF_FAILED(rank_is(op, s, 3));
  if (op.dim(s, 0) == dim0 && op.dim(s, 1) == dim1 && op.dim(s, 2) == dim2) return REMAT_OK;
  return bad_shape(op)
      .has_dims(s)
      .text(", expected ")
      .text(expected)
      .text(" = [")
      .num(dim0)
      .text(", ")
      .num(dim1)
      .text(", ")
      .num(dim2)
      .text("] from ")
      .tensor(from)
      .text(" ")
      .dims(from);
}

// |s|'s last dim is |heads| whole heads of at least one column each.
remat_status whole_heads(Op& op, Slot s, int64_t heads) {
  const int64_t width = op.dim(s, 2);
  if (width >= heads && width % heads == 0) return REMAT_OK;
  return bad_shape(op)
      .has_dims(s)
      .text(": last dim ")
      .num(width)
      .text(" is not a positive multiple of heads ")
      .num(heads);
}

// The attributes, then q, k, v (at |q|, |q| + 1, |q| + 2) and the mask when the op has one (at
// |mask|); fills |shape|.
remat_status check_inputs(Op& op, uint32_t q, uint32_t mask, AttentionShape* shape) {
  namespace a = attr::attention;
  const int64_t heads = op.attr(a::heads), key = op.attr(a::key);
  if (heads < 1 || heads > kMaxHeads) {
    return bad_shape(op)
        .iattr(a::heads)
        .text(" is ")
        .num(heads)
        .text(", expected 1 to ")
        .num(kMaxHeads);
  }
  if (key < 0) return bad_shape(op).iattr(a::key).text(" is ").num(key).text(", expected >= 0");
  RETURN_IF_FAILED(fattr_in(op, a::p, 0.0f, false, 1.0f));
  const Slot qs = In(q), ks = In(q + 1), vs = In(q + 2);
  for (Slot s : {qs, ks, vs}) {
    RETURN_IF_FAILED(rank_is(op, s, 3));
    RETURN_IF_FAILED(whole_heads(op, s, heads));
  }
  const int64_t batch = op.dim(qs, 0), sk = op.dim(ks, 1);
  RETURN_IF_FAILED(dims_are(op, ks, batch, sk, op.dim(qs, 2), "[B, Sk, heads * D]", qs));
  RETURN_IF_FAILED(dims_are(op, vs, batch, sk, op.dim(vs, 2), "[B, Sk, heads * Dv]", ks));
  *shape = {batch, op.dim(qs, 1), sk, heads, op.dim(qs, 2) / heads, op.dim(vs, 2) / heads};
  if (op.num_in <= mask) return REMAT_OK;
  const Slot m = In(mask);
  const bool shared = op.rank(m) == 2 && op.dim(m, 0) == shape->sq && op.dim(m, 1) == shape->sk;
  const bool per_batch = op.rank(m) == 3 && op.dim(m, 0) == batch && op.dim(m, 1) == shape->sq &&
                         op.dim(m, 2) == shape->sk;
  if (shared || per_batch) return REMAT_OK;
  return bad_shape(op)
      .has_dims(m)
      .text(", expected [Sq, Sk] = [")
      .num(shape->sq)
      .text(", ")
      .num(shape->sk)
      .text("] or [B, Sq, Sk] = [")
      .num(batch)
      .text(", ")
      .num(shape->sq)
      .text(", ")
      .num(shape->sk)
      .text("]");
}

}  // namespace

remat_status rule_attention(Op& op) {
  AttentionShape s;
  RETURN_IF_FAILED(check_inputs(op, 0, 3, &s));
  RETURN_IF_FAILED(
      dims_are(op, Out(0), s.batch, s.sq, s.heads * s.dv, "[B, Sq, heads * Dv]", In(2)));
  return dims_are(op, Out(1), s.batch, s.heads, s.sq, "[B, heads, Sq]", In(0));
}

remat_status rule_attention_grad(Op& op) {
  AttentionShape s;
  RETURN_IF_FAILED(check_inputs(op, 1, 6, &s));
  RETURN_IF_FAILED(
      dims_are(op, In(0), s.batch, s.sq, s.heads * s.dv, "[B, Sq, heads * Dv]", In(3)));
  RETURN_IF_FAILED(
      dims_are(op, In(4), s.batch, s.sq, s.heads * s.dv, "[B, Sq, heads * Dv]", In(3)));
  RETURN_IF_FAILED(dims_are(op, In(5), s.batch, s.heads, s.sq, "[B, heads, Sq]", In(1)));
  for (uint32_t i = 0; i < 3; ++i) RETURN_IF_FAILED(same_dims(op, Out(i), In(1 + i)));
  return REMAT_OK;
}

}  // namespace op_check_internal
}  // namespace remat
