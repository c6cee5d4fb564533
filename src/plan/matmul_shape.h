// The shape of a matmul op (plan/op_catalogue.h, kMatMul): matrix sizes, batch counts and the
// shape mode, worked out once for the verifier and for every backend's kernel.
#ifndef REMAT_PLAN_MATMUL_SHAPE_H_
#define REMAT_PLAN_MATMUL_SHAPE_H_

#include <stdint.h>

namespace remat {

/// How the batches of A, B and C relate.
enum class MatmulMode : uint8_t {
  kInvalid,    ///< No mode fits (the verifier rejects such an op).
  kReduce,     ///< C rank 2, batch(A) == batch(B) > 1: C = sum over the batch (weight grads).
  kBroadcast,  ///< B rank 2, batch(A) == batch(C): every batch entry shares B.
  kBatched,    ///< batch(A) == batch(B) == batch(C).
};

/// A matmul's sizes: C = alpha * op(A) op(B), op(A) M x K, op(B) K x N, per batch entry.
struct MatmulShape {
  bool trans_a, trans_b;
  int64_t a_rows, a_cols;             ///< A's stored matrix (its last two dims; rank 1: one row).
  int64_t b_rows, b_cols;             ///< B's stored matrix.
  int64_t m, n, k;                    ///< The product's sizes.
  int64_t kb;                         ///< K as B gives it; equal to |k| in a valid op.
  int64_t batch_a, batch_b, batch_c;  ///< Matrices in each tensor.
  MatmulMode mode;                    ///< Chosen in the order reduce, broadcast, batched.
};

/// The last two dims of a tensor of |rank| dims |dims| and |numel| elements as a matrix, and
/// how many such matrices it holds. |Dim|: int64_t in a plan, TensorDim in a session's tables.
template <typename Dim>
inline void matrix_of(const Dim* dims, int rank, int64_t numel, int64_t* rows, int64_t* cols,
                      int64_t* batch) {
  *cols = rank >= 1 ? dims[rank - 1] : 1;
  *rows = rank >= 2 ? dims[rank - 2] : 1;
  *batch = *rows * *cols > 0 ? numel / (*rows * *cols) : 0;
}

/// The shape of a matmul with tensors A, B, C (dims, rank, element count each) and the
/// transpose flags. Never overflows for tensors the verifier accepts (each <= 2^40 elements).
template <typename Dim>
inline MatmulShape matmul_shape(const Dim* a, int a_rank, int64_t a_numel, const Dim* b, int b_rank,
                                int64_t b_numel, const Dim* c, int c_rank, int64_t c_numel,
                                bool trans_a, bool trans_b) {
  MatmulShape s{};
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  int64_t c_rows = 0, c_cols = 0;
  matrix_of(a, a_rank, a_numel, &s.a_rows, &s.a_cols, &s.batch_a);
  matrix_of(b, b_rank, b_numel, &s.b_rows, &s.b_cols, &s.batch_b);
  matrix_of(c, c_rank, c_numel, &c_rows, &c_cols, &s.batch_c);
  s.m = trans_a ? s.a_cols : s.a_rows;
  s.k = trans_a ? s.a_rows : s.a_cols;
  s.kb = trans_b ? s.b_cols : s.b_rows;
  s.n = trans_b ? s.b_rows : s.b_cols;
  if (c_rank == 2 && s.batch_a > 1 && s.batch_a == s.batch_b) {
    s.mode = MatmulMode::kReduce;
  } else if (b_rank == 2 && s.batch_a == s.batch_c) {
    s.mode = MatmulMode::kBroadcast;
  } else if (s.batch_a == s.batch_b && s.batch_b == s.batch_c) {
    s.mode = MatmulMode::kBatched;
  } else {
    s.mode = MatmulMode::kInvalid;
  }
  return s;
}

}  // namespace remat

#endif  // REMAT_PLAN_MATMUL_SHAPE_H_
