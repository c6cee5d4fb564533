// Per-op validation rules: the shape relations shared by many ops and each op family's
// attribute values and shapes, run by check_op once the generic checks have passed.
#include <cmath>

#include "plan/head_matmul_shape.h"
#include "plan/matmul_shape.h"
#include "plan/op_check_internal.h"
#include "plan/op_subset.h"
#include "plan/ops.h"

namespace remat {
namespace op_check_internal {

// ---- Shape relations shared by many ops (declared in op_check_internal.h) ----------------------

remat_status same_numel(Op& op, Slot s, Slot ref) {
  if (op.numel(s) == op.numel(ref)) return REMAT_OK;
  return bad_shape(op)
      .has_numel(s)
      .text(", expected ")
      .num(op.numel(ref))
      .text(" elements as ")
      .tensor(ref)
      .text(" ")
      .dims(ref);
}

// Same element count and same row length: for ops that work along the last axis.
remat_status same_rows(Op& op, Slot s, Slot ref) {
  RETURN_IF_FAILED(same_numel(op, s, ref));
  if (op.dim(s, -1) == op.dim(ref, -1)) return REMAT_OK;
  return bad_shape(op)
      .has_dims(s)
      .text(", expected last dim ")
      .num(op.dim(ref, -1))
      .text(" as ")
      .tensor(ref)
      .text(" ")
      .dims(ref);
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
  return bad_shape(op)
      .has_numel(s)
      .text(", expected ")
      .text(what)
      .text(" = ")
      .num(expected)
      .text(" from ")
      .tensor(from)
      .text(" ")
      .dims(from);
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
  return bad_shape(op)
      .has_dims(part)
      .text(", expected trailing dims of ")
      .tensor(whole)
      .text(" ")
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

remat_status flag_01(Op& op, IntAttr a) {
  if (op.attr(a) == 0 || op.attr(a) == 1) return REMAT_OK;
  return bad_shape(op).iattr(a).text(" is ").num(op.attr(a)).text(", expected 0 or 1");
}

// fattr |a| lies in [lo, hi) (|open_lo|: in (lo, hi)); values are already finite.
remat_status fattr_in(Op& op, FloatAttr a, float lo, bool open_lo, float hi) {
  const float v = op.attr(a);
  if ((open_lo ? v > lo : v >= lo) && v < hi) return REMAT_OK;
  Failure f = bad_shape(op).fattr(a).text(" is ").real(v).text(", expected ");
  return hi == INFINITY ? f.text("> ").real(lo)
                        : f.text(open_lo ? "in (" : "in [").real(lo).text(", ").real(hi).text(")");
}

namespace {

// ---- Per-op relations --------------------------------------------------------------------------

remat_status check_matmul(Op& op) {
  RETURN_IF_FAILED(flag_01(op, attr::matmul::trans_a));
  RETURN_IF_FAILED(flag_01(op, attr::matmul::trans_b));
  const Slot a = In(0), b = In(1), c = Out(0);
  const Slot matrices[] = {a, b, c};
  for (Slot s : matrices) {
    if (op.rank(s) < 2) {
      return bad_shape(op)
          .has_dims(s)
          .text(": rank ")
          .num(op.rank(s))
          .text(", expected at least 2 (a matrix)");
    }
  }
  const bool ta = op.attr(attr::matmul::trans_a) != 0, tb = op.attr(attr::matmul::trans_b) != 0;
  // Two dims multiply to at most the element count, checked <= 2^40: no overflow.
  const ShapeView &va = op.view(a), &vb = op.view(b), &vc = op.view(c);
  const MatmulShape shape = matmul_shape(va.dims, va.rank, op.numel(a), vb.dims, vb.rank,
                                         op.numel(b), vc.dims, vc.rank, op.numel(c), ta, tb);
  if (shape.kb != shape.k) {
    return bad_shape(op)
        .has_dims(b)
        .text(tb ? " (trans_b 1)" : "")
        .text(", expected K = ")
        .num(shape.k)
        .text(" from ")
        .tensor(a)
        .text(" ")
        .dims(a)
        .text(ta ? " (trans_a 1)" : "");
  }
  if (op.dim(c, -2) != shape.m || op.dim(c, -1) != shape.n) {
    return bad_shape(op)
        .has_dims(c)
        .text(", expected a matrix of [M, N] = [")
        .num(shape.m)
        .text(", ")
        .num(shape.n)
        .text("]");
  }
  if (shape.mode != MatmulMode::kInvalid) {
    if (op.num_in < 3) return REMAT_OK;
    if (shape.mode == MatmulMode::kReduce) {
      return bad_shape(op).tensor(In(2)).text(
          " in reduce mode (C summed over the batch): a bias is for"
          " batched and broadcast products only");
    }
    RETURN_IF_FAILED(rank_is(op, In(2), 1));
    return numel_is(op, In(2), shape.n, "N", c);
  }
  return bad_shape(op)
      .text("batch sizes A ")
      .num(shape.batch_a)
      .text(", B ")
      .num(shape.batch_b)
      .text(", C ")
      .num(shape.batch_c)
      .text(
          " fit no mode (batched: all equal; broadcast: B rank 2, A's = C's; reduce: C rank 2,"
          " A's = B's > 1)");
}

remat_status check_head_matmul(Op& op) {
  namespace h = attr::head_matmul;
  RETURN_IF_FAILED(flag_01(op, h::trans_a));
  RETURN_IF_FAILED(flag_01(op, h::trans_b));
  const int64_t heads = op.attr(h::heads), interleaved = op.attr(h::interleaved);
  if (heads < 1 || heads > kMaxHeads) {
    return bad_shape(op)
        .iattr(h::heads)
        .text(" is ")
        .num(heads)
        .text(", expected 1 to ")
        .num(kMaxHeads);
  }
  if (interleaved < 0 || interleaved > kHeadLayoutBits) {
    return bad_shape(op)
        .iattr(h::interleaved)
        .text(" is ")
        .num(interleaved)
        .text(", expected 0 to 7 (bits 1: A, 2: B, 4: C hold their heads interleaved)");
  }
  const Slot a = In(0), b = In(1), c = Out(0);
  const Slot matrices[] = {a, b, c};
  const int64_t bits[] = {kHeadsOfA, kHeadsOfB, kHeadsOfC};
  for (int i = 0; i < 3; ++i) {
    const Slot s = matrices[i];
    if (op.rank(s) < 2) {
      return bad_shape(op)
          .has_dims(s)
          .text(": rank ")
          .num(op.rank(s))
          .text(", expected at least 2 (a matrix)");
    }
    if ((interleaved & bits[i]) != 0 && op.dim(s, -1) % heads != 0) {
      return bad_shape(op)
          .has_dims(s)
          .text(", interleaved: its last dim is not a multiple of heads ")
          .num(heads);
    }
  }
  const bool ta = op.attr(h::trans_a) != 0, tb = op.attr(h::trans_b) != 0;
  const ShapeView &va = op.view(a), &vb = op.view(b), &vc = op.view(c);
  const HeadMatmulShape shape =
      head_matmul_shape(va.dims, va.rank, op.numel(a), vb.dims, vb.rank, op.numel(b), vc.dims,
                        vc.rank, op.numel(c), ta, tb, heads, interleaved);
  if (shape.kb != shape.k) {
    return bad_shape(op)
        .has_dims(b)
        .text(tb ? " (trans_b 1)" : "")
        .text(", expected K = ")
        .num(shape.k)
        .text(" from ")
        .tensor(a)
        .text(" ")
        .dims(a)
        .text(ta ? " (trans_a 1)" : "");
  }
  if (shape.c.rows != shape.m || shape.c.cols != shape.n) {
    return bad_shape(op)
        .has_dims(c)
        .text(", expected matrices of [M, N] = [")
        .num(shape.m)
        .text(", ")
        .num(shape.n)
        .text("] per head");
  }
  if (shape.valid) return REMAT_OK;
  // The first tensor that is not whole heads, else the first whose count differs from A's.
  const Slot odd = !shape.a.whole_heads                                           ? a
                   : !shape.b.whole_heads || shape.b.products != shape.a.products ? b
                                                                                  : c;
  return bad_shape(op)
      .has_dims(odd)
      .text(": per-head matrices A ")
      .num(shape.a.products)
      .text(", B ")
      .num(shape.b.products)
      .text(", C ")
      .num(shape.c.products)
      .text(", expected equal counts, each a multiple of heads ")
      .num(heads);
}

remat_status check_layernorm(Op& op) {
  const Slot x = In(0);
  const int64_t n = op.dim(x, -1), rows = op.rows(x);
  RETURN_IF_FAILED(same_rows(op, Out(0), x));
  RETURN_IF_FAILED(numel_is(op, In(1), n, "N", x));
  RETURN_IF_FAILED(numel_is(op, In(2), n, "N", x));
  RETURN_IF_FAILED(numel_is(op, Out(1), rows, "rows", x));
  RETURN_IF_FAILED(numel_is(op, Out(2), rows, "rows", x));
  return fattr_in(op, attr::layernorm::eps, 0.0f, true, INFINITY);
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

// dropout and dropout_grad (whose attributes are dropout's: backends/shared/op_args.h).
remat_status check_dropout(Op& op) {
  const int64_t key = op.attr(attr::dropout::key);
  if (key < 0) {
    return bad_shape(op).iattr(attr::dropout::key).text(" is ").num(key).text(", expected >= 0");
  }
  RETURN_IF_FAILED(fattr_in(op, attr::dropout::p, 0.0f, false, 1.0f));
  return all_same_numel(op);
}

// |flat| holds one row of width H (dim 1 of the rank-2 |table|) per id of |ids|.
remat_status check_embedding_rows(Op& op, Slot table, Slot flat, Slot ids) {
  RETURN_IF_FAILED(rank_is(op, table, 2));
  const int64_t h = op.dim(table, 1);
  if (op.dim(flat, -1) != h) {
    return bad_shape(op)
        .has_dims(flat)
        .text(", expected last dim H = ")
        .num(h)
        .text(" from ")
        .tensor(table)
        .text(" ")
        .dims(table);
  }
  // numel(flat) == numel(ids) * H, compared without forming the product.
  if (op.numel(flat) / h == op.numel(ids)) return REMAT_OK;
  return bad_shape(op)
      .has_dims(flat)
      .text(", expected one row of H = ")
      .num(h)
      .text(" per id of ")
      .tensor(ids)
      .text(" ")
      .dims(ids)
      .text(" (")
      .num(op.numel(ids))
      .text(" rows)");
}

remat_status check_permute(Op& op) {
  const int64_t r = op.attr(attr::permute::rank);
  const int64_t* d = op.iattrs + attr::permute::dim(0);
  const int64_t* p = op.iattrs + attr::permute::perm(r, 0);
  int64_t numel = 1;
  for (int64_t i = 0; i < r; ++i) {
    if (d[i] < 1) {
      return bad_shape(op)
          .iattr(attr::permute::dim(i))
          .text(" is ")
          .num(d[i])
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
      return bad_shape(op)
          .iattr(attr::permute::perm(r, i))
          .text(" is ")
          .num(p[i])
          .text(", expected a permutation of 0..")
          .num(r - 1)
          .text(" (each once)");
    }
    seen[p[i]] = true;
  }
  const Slot views[] = {In(0), Out(0)};
  for (Slot s : views) {
    if (op.numel(s) != numel) {
      return bad_shape(op)
          .has_numel(s)
          .text(", expected ")
          .num(numel)
          .text(" elements, the product of view dims d");
    }
  }
  return REMAT_OK;
}

// kSelect's input and kSelectGrad's output (|full|) have the axis; |part| lacks it.
remat_status check_select(Op& op, Slot full, Slot part) {
  // select and select_grad (whose attributes are select's: backends/shared/op_args.h).
  const int64_t axis = op.attr(attr::select::axis), index = op.attr(attr::select::index);
  if (axis < 0 || axis >= op.rank(full)) {
    return bad_shape(op)
        .iattr(attr::select::axis)
        .text(" is ")
        .num(axis)
        .text(", expected 0..")
        .num(op.rank(full) - 1)
        .text(" for ")
        .tensor(full)
        .text(" ")
        .dims(full);
  }
  const int64_t n = op.dim(full, static_cast<int>(axis));
  if (index < 0 || index >= n) {
    return bad_shape(op)
        .iattr(attr::select::index)
        .text(" is ")
        .num(index)
        .text(", expected 0..")
        .num(n - 1)
        .text(" along axis ")
        .num(axis)
        .text(" of ")
        .tensor(full)
        .text(" ")
        .dims(full);
  }
  return numel_is(op, part, op.numel(full) / n, "numel without the axis", full);
}

// Logits or probs of rank 2 [N, C] with N labels.
remat_status check_class_rows(Op& op, Slot scores, Slot labels) {
  RETURN_IF_FAILED(rank_is(op, scores, 2));
  return numel_is(op, labels, op.dim(scores, 0), "N", scores);
}

// reduce_sum and broadcast: |count| >= 1 consecutive axes of |full| from |axis| are reduced,
// so |part| has |full|'s element count without them.
remat_status check_reduced_axes(Op& op, Slot full, Slot part) {
  namespace a = attr::reduce_sum;  // broadcast's are alike (backends/shared/op_args.h)
  const int64_t rank = op.rank(full), axis = op.attr(a::axis), count = op.attr(a::count);
  if (axis < 0 || axis >= rank) {
    return bad_shape(op)
        .iattr(a::axis)
        .text(" is ")
        .num(axis)
        .text(", expected 0..")
        .num(rank - 1)
        .text(" for ")
        .tensor(full)
        .text(" ")
        .dims(full);
  }
  if (count < 1 || count > rank - axis) {
    return bad_shape(op)
        .iattr(a::count)
        .text(" is ")
        .num(count)
        .text(", expected 1..")
        .num(rank - axis)
        .text(" for ")
        .tensor(full)
        .text(" ")
        .dims(full)
        .text(" from axis ")
        .num(axis);
  }
  RETURN_IF_FAILED(flag_01(op, a::mean));
  int64_t kept = 1;
  for (int64_t i = 0; i < rank; ++i) {
    if (i < axis || i >= axis + count) kept *= op.dim(full, static_cast<int>(i));
  }
  return numel_is(op, part, kept, "the product of the other axes", full);
}

remat_status check_adam(Op& op) {
  namespace a = attr::adam_update;
  RETURN_IF_FAILED(flag_01(op, a::decoupled));
  RETURN_IF_FAILED(fattr_in(op, a::b1, 0.0f, false, 1.0f));
  RETURN_IF_FAILED(fattr_in(op, a::b2, 0.0f, false, 1.0f));
  RETURN_IF_FAILED(fattr_in(op, a::eps, 0.0f, true, INFINITY));
  for (uint32_t i = 1; i < 4; ++i) RETURN_IF_FAILED(same_numel(op, In(i), In(0)));
  RETURN_IF_FAILED(same_dims(op, Out(0), In(0)));
  RETURN_IF_FAILED(same_dims(op, Out(1), In(2)));
  return same_dims(op, Out(2), In(3));
}

// ---- The catalogue's rule column: rule_<name> for each op --------------------------------------

remat_status rule_none(Op&) { return REMAT_OK; }
// Elementwise ops, copy, scale, mse_grad: flat arrays of one size.
remat_status rule_same_numel(Op& op) { return all_same_numel(op); }
// Row-wise ops (softmax and its gradient): one size and one row length.
remat_status rule_same_rows(Op& op) { return all_same_rows(op); }
remat_status rule_matmul(Op& op) { return check_matmul(op); }
remat_status rule_head_matmul(Op& op) { return check_head_matmul(op); }
remat_status rule_bias_add(Op& op) {
  RETURN_IF_FAILED(trailing_dims_of(op, In(1), In(0)));
  return same_numel(op, Out(0), In(0));
}
remat_status rule_reduce_leading(Op& op) { return trailing_dims_of(op, Out(0), In(0)); }
remat_status rule_layernorm(Op& op) { return check_layernorm(op); }
remat_status rule_layernorm_grad(Op& op) { return check_layernorm_grad(op); }
remat_status rule_dropout(Op& op) { return check_dropout(op); }
remat_status rule_embedding(Op& op) { return check_embedding_rows(op, In(1), Out(0), In(0)); }
remat_status rule_embedding_grad(Op& op) { return check_embedding_rows(op, Out(0), In(0), In(1)); }
remat_status rule_permute(Op& op) { return check_permute(op); }
remat_status rule_select(Op& op) { return check_select(op, In(0), Out(0)); }
remat_status rule_select_grad(Op& op) { return check_select(op, Out(0), In(0)); }
remat_status rule_softmax_cross_entropy(Op& op) {
  RETURN_IF_FAILED(check_class_rows(op, In(0), In(1)));
  RETURN_IF_FAILED(is_scalar(op, Out(0)));
  return same_rows(op, Out(1), In(0));
}
remat_status rule_softmax_cross_entropy_grad(Op& op) {
  RETURN_IF_FAILED(check_class_rows(op, In(0), In(1)));
  return same_rows(op, Out(0), In(0));
}
remat_status rule_mse(Op& op) {
  RETURN_IF_FAILED(same_numel(op, In(1), In(0)));
  return is_scalar(op, Out(0));
}
remat_status rule_sgd_update(Op& op) {
  for (uint32_t i = 1; i < op.num_in; ++i) RETURN_IF_FAILED(same_numel(op, In(i), In(0)));
  RETURN_IF_FAILED(same_dims(op, Out(0), In(0)));
  return op.num_out == 2 ? same_dims(op, Out(1), In(2)) : REMAT_OK;
}
remat_status rule_adam_update(Op& op) { return check_adam(op); }
remat_status rule_reduce_sum(Op& op) { return check_reduced_axes(op, In(0), Out(0)); }
remat_status rule_broadcast(Op& op) { return check_reduced_axes(op, Out(0), In(0)); }
// Spill and prefetch: the same bytes on both sides of the copy.
remat_status rule_copy_between_regions(Op& op) {
  if (op.view(Out(0)).dtype != op.view(In(0)).dtype) {
    return fail(op, REMAT_ERROR_BAD_DTYPE)
        .tensor(Out(0))
        .text(" has dtype ")
        .text(dtype_name(op.view(Out(0)).dtype))
        .text(", expected ")
        .text(dtype_name(op.view(In(0)).dtype))
        .text(" as ")
        .tensor(In(0));
  }
  return same_numel(op, Out(0), In(0));
}

// allreduce_start and allreduce_wait: float32 tensors (what a communicator sums) and a bucket
// number in [0, 2^20]. That a start's inputs are distinct, waited for by the wait of its bucket
// and untouched until then is the plan's dataflow (runtime/plan_dataflow.cc).
remat_status rule_allreduce(Op& op) {
  for (uint32_t i = 0; i < op.num_in; ++i) {
    if (op.view(In(i)).dtype != REMAT_DTYPE_F32) {
      return fail(op, REMAT_ERROR_BAD_DTYPE)
          .tensor(In(i))
          .text(" has dtype ")
          .text(dtype_name(op.view(In(i)).dtype))
          .text(", expected f32 (a communicator sums float32 arrays)");
    }
  }
  const int64_t bucket = op.attr(attr::allreduce_start::bucket);
  if (bucket >= 0 && bucket <= (int64_t{1} << 20)) return REMAT_OK;
  return bad_shape(op)
      .iattr(attr::allreduce_start::bucket)
      .text(" is ")
      .num(bucket)
      .text(", expected in [0, 1048576]");
}

// An op a firmware build does not carry (plan/op_subset.h): refused, naming it.
remat_status rule_not_in_build(Op& op) {
  return fail(op, REMAT_ERROR_UNIMPLEMENTED)
      .text("not in this build (a firmware build carries only the ops of its plan)");
}

using Rule = remat_status (*)(Op& op);

struct RuleTable {
  Rule fn[kOpCodeCount];
};

constexpr RuleTable make_rules() {
  RuleTable t{};
#define REMAT_OP_RULE(Name, snake, code, in, out, ia, fa, dt, rule) \
  t.fn[code] = op_in_build(code) ? rule_##rule : rule_not_in_build;
  REMAT_OP_CATALOGUE(REMAT_OP_RULE)
#undef REMAT_OP_RULE
  return t;
}

constexpr RuleTable kRules = make_rules();

}  // namespace

remat_status check_relations(Op& op) { return kRules.fn[op.code](op); }

#undef RETURN_IF_FAILED

}  // namespace op_check_internal
}  // namespace remat
