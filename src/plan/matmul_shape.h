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

/// How a matmul over a rank-2 A whose rows are a batch's (a linear layer's input or output
/// gradient, [batch, features]) may run a chunk of those rows at a time: what a backend that
/// widens or rounds such a tensor in chunks of rows needs (backends/shared/batch_chunks.h).
enum class MatmulRows : uint8_t {
  kWhole,        ///< Neither: the call runs whole.
  kRowsOfAAndC,  ///< C = op(A) op(B) [+ bias], A not transposed, A and C of rank 2 with A's rows:
                 ///< each row of C from that row of A, B (and the bias) serving every row.
  kSumOverRows,  ///< C = A^T B, A and B of rank 2 with the same rows, C float32 of rank 2 without
                 ///< a bias: C sums each row's product (a weight gradient), a chunk's sum added
                 ///< to the chunks' before it.
};

/// The MatmulRows of a matmul whose A, B and C have ranks |a_rank|, |b_rank|, |c_rank| and leading
/// dims |a_rows|, |b_rows|, |c_rows|, with the transpose flags, |c_f32| where C is float32, |bias|
/// where it has one, |a_is_b| where A and B are one tensor and |c_is_operand| where C is A or B
/// (then kWhole).
inline MatmulRows matmul_rows(int a_rank, int b_rank, int c_rank, int64_t a_rows, int64_t b_rows,
                              int64_t c_rows, bool trans_a, bool trans_b, bool c_f32, bool bias,
                              bool a_is_b, bool c_is_operand) {
  if (a_rank != 2 || b_rank != 2 || c_rank != 2 || c_is_operand) return MatmulRows::kWhole;
  // The rows of an A that is B too serve every row of C.
  if (!trans_a && a_rows == c_rows && !a_is_b) return MatmulRows::kRowsOfAAndC;
  if (trans_a && !trans_b && a_rows == b_rows && c_f32 && !bias) return MatmulRows::kSumOverRows;
  return MatmulRows::kWhole;
}

}  // namespace remat

#endif  // REMAT_PLAN_MATMUL_SHAPE_H_
