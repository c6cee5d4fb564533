// The shape of a head_matmul op (plan/op_catalogue.h, kHeadMatMul): attention's per-head
// products, with operands whose heads are interleaved read and written in place. Worked out once
// for the verifier and for every backend's kernel.
#ifndef REMAT_PLAN_HEAD_MATMUL_SHAPE_H_
#define REMAT_PLAN_HEAD_MATMUL_SHAPE_H_

#include <stdint.h>

namespace remat {

/// The most heads a head_matmul may have (the verifier's bound).
constexpr int64_t kMaxHeads = int64_t{1} << 24;

/// Bits of head_matmul's `interleaved` attribute: which tensors hold their heads interleaved.
constexpr int64_t kHeadsOfA = 1;
constexpr int64_t kHeadsOfB = 2;
constexpr int64_t kHeadsOfC = 4;
constexpr int64_t kHeadLayoutBits = 7;  ///< Every valid bit.

/// One operand's matrices: product i (outer entry i / heads, head i % heads) starts at
/// offset(i) floats into the tensor, its rows |ld| floats apart.
struct HeadOperand {
  int64_t rows, cols;    ///< One product's stored matrix.
  int64_t ld;            ///< Floats from one row to the next.
  int64_t head_stride;   ///< Floats from one head's matrix to the next head's.
  int64_t outer_stride;  ///< Floats from one outer entry's heads to the next entry's.
  int64_t products;      ///< Matrices the tensor holds (outer entries x heads).
  bool whole_heads;      ///< The tensor divides into |heads| matrices per outer entry.

  /// Offset in floats of product |i| of an op with |heads| heads (heads > 0).
  int64_t offset(int64_t i, int64_t heads) const {
    return i / heads * outer_stride + i % heads * head_stride;
  }
};

/// A tensor of |rank| >= 2 dims |dims| and |numel| elements as |heads| > 0 heads' matrices.
/// Interleaved: [..., rows, heads * cols], head h's matrix the columns h * cols to
/// (h + 1) * cols - 1 of each row (a linear layer's output, viewed per head without a permute).
/// Otherwise: [..., rows, cols] with the heads' matrices one after another. |Dim|: int64_t in a
/// plan, TensorDim in a session's tables.
template <typename Dim>
inline HeadOperand head_operand(const Dim* dims, int rank, int64_t numel, int64_t heads,
                                bool interleaved) {
  HeadOperand o{};
  const int64_t last = rank >= 1 ? dims[rank - 1] : 1;
  o.rows = rank >= 2 ? dims[rank - 2] : 1;
  o.cols = interleaved ? last / heads : last;
  o.whole_heads = interleaved ? last % heads == 0 : true;
  const int64_t matrix = o.rows * o.cols;
  o.products = matrix > 0 ? numel / matrix : 0;
  if (interleaved) {
    o.ld = last;
    o.head_stride = o.cols;
    o.outer_stride = o.rows * last;
  } else {
    o.ld = o.cols;
    o.head_stride = matrix;
    // products * matrix <= numel: with products >= heads the stride cannot overflow.
    o.outer_stride = o.products >= heads ? matrix * heads : 0;
    o.whole_heads = o.products % heads == 0;
  }
  return o;
}

/// A head_matmul's sizes: C[i] = alpha * op(A[i]) op(B[i]) for every product i, op(A) M x K,
/// op(B) K x N.
struct HeadMatmulShape {
  bool trans_a, trans_b;  ///< op(A) = A^T, op(B) = B^T.
  int64_t heads;          ///< Heads per outer entry.
  HeadOperand a, b, c;    ///< Each tensor's matrices.
  int64_t m, n, k;        ///< The product's sizes.
  int64_t kb;             ///< K as B gives it; equal to k in a valid op.
  bool valid;             ///< Whole heads everywhere and one product count for A, B and C.
};

/// The shape of a head_matmul with tensors A, B, C (dims, rank, element count each), the
/// transpose flags, |heads| > 0 and the `interleaved` bits (kHeadsOfA, kHeadsOfB, kHeadsOfC).
template <typename Dim>
inline HeadMatmulShape head_matmul_shape(const Dim* a, int a_rank, int64_t a_numel, const Dim* b,
                                         int b_rank, int64_t b_numel, const Dim* c, int c_rank,
                                         int64_t c_numel, bool trans_a, bool trans_b, int64_t heads,
                                         int64_t interleaved) {
  HeadMatmulShape s{};
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.heads = heads;
  s.a = head_operand(a, a_rank, a_numel, heads, (interleaved & kHeadsOfA) != 0);
  s.b = head_operand(b, b_rank, b_numel, heads, (interleaved & kHeadsOfB) != 0);
  s.c = head_operand(c, c_rank, c_numel, heads, (interleaved & kHeadsOfC) != 0);
  s.m = trans_a ? s.a.cols : s.a.rows;
  s.k = trans_a ? s.a.rows : s.a.cols;
  s.kb = trans_b ? s.b.cols : s.b.rows;
  s.n = trans_b ? s.b.rows : s.b.cols;
  s.valid = s.a.whole_heads && s.b.whole_heads && s.c.whole_heads && s.a.products == s.b.products &&
            s.b.products == s.c.products;
  return s;
}

/// Whether a head_matmul of shape |s| whose tensors A, B and C have ranks |a_rank|, |b_rank|,
/// |c_rank| and leading dims |a0|, |b0|, |c0| computes each entry of that leading dim alone: every
/// rank is 3 or more, the leading dims are equal and each entry holds one outer entry's heads, so
/// that a chunk of the entries is a head_matmul of its own (the GPUs widen one a chunk of its
/// batch at a time: backends/gpu/ops/widening.h).
inline bool head_matmul_by_leading_entry(const HeadMatmulShape& s, int a_rank, int b_rank,
                                         int c_rank, int64_t a0, int64_t b0, int64_t c0) {
  return s.valid && a_rank >= 3 && b_rank >= 3 && c_rank >= 3 && a0 > 0 && a0 == b0 && b0 == c0 &&
         s.a.products == a0 * s.heads;
}

}  // namespace remat

#endif  // REMAT_PLAN_HEAD_MATMUL_SHAPE_H_
