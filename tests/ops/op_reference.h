// Float64 reference implementations of the ops, written from plan/ops.h independently of the
// kernels: the forward tests compare against them and the gradient tests differentiate them.
#ifndef REMAT_TESTS_OPS_OP_REFERENCE_H_
#define REMAT_TESTS_OPS_OP_REFERENCE_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace ops_test {

using Vec = std::vector<double>;

/// The three shape modes of kMatMul (plan/ops.h).
enum class MatMulMode { kBatched, kBroadcast, kReduce };

/// One matmul problem: op(A) is m x k, op(B) is k x n, |batch| matrices.
struct MatMulCase {
  MatMulMode mode;
  bool trans_a, trans_b;
  int64_t batch, m, k, n;

  std::vector<int64_t> a_dims() const;
  std::vector<int64_t> b_dims() const;
  std::vector<int64_t> c_dims() const;
};

Vec ref_matmul(const MatMulCase& mc, double alpha, const Vec& a, const Vec& b);

/// One head_matmul operand: |outer| entries of |heads| stored matrices of |rows| x |cols|, held
/// interleaved ([outer, rows, heads * cols]) or stacked ([outer, heads, rows, cols]).
struct HeadTensor {
  int64_t outer, heads, rows, cols;
  bool interleaved;
  std::vector<int64_t> dims() const;
  /// Index of element (i, j) of head |h|'s matrix of entry |o|.
  size_t at(int64_t o, int64_t h, int64_t i, int64_t j) const;
};

/// A head_matmul: C = alpha op(A) op(B) per head, op(A) M x K, each operand's layout from the
/// `interleaved` bits |layout| (1: A, 2: B, 4: C).
struct HeadMatMulCase {
  int64_t outer, heads, m, k, n;
  bool trans_a, trans_b;
  int64_t layout;
  HeadTensor a() const;
  HeadTensor b() const;
  HeadTensor c() const;
};

/// C of |hc| in float64, indexed element by element.
Vec ref_head_matmul(const HeadMatMulCase& hc, double alpha, const Vec& a, const Vec& b);
Vec ref_softmax(const Vec& x, int64_t n);
/// y, mean[rows], rstd[rows] of layer norm over rows of length |n|.
void ref_layernorm(const Vec& x, const Vec& gamma, const Vec& beta, int64_t n, double eps, Vec* y,
                   Vec* mean, Vec* rstd);
/// keep(i) of kDropout, from the Philox stream (seed, step, key).
bool ref_dropout_keep(uint64_t seed, uint64_t step, uint64_t key, uint64_t i, double p);
Vec ref_dropout(const Vec& x, uint64_t seed, uint64_t step, uint64_t key, double p);
Vec ref_embedding(const std::vector<int32_t>& ids, const Vec& table, int64_t h);
/// y of kPermute for x of dims |d| and permutation |p|.
Vec ref_permute(const Vec& x, const std::vector<int64_t>& d, const std::vector<int64_t>& p);
Vec ref_select(const Vec& x, const std::vector<int64_t>& dims, int64_t axis, int64_t index);
/// Mean cross-entropy of softmax(logits rows of |c|) against |labels|.
double ref_cross_entropy(const Vec& logits, const std::vector<int32_t>& labels, int64_t c);
double ref_mse(const Vec& pred, const Vec& target);
double ref_gelu(double x);

/// One step of torch.optim.SGD on double state.
void ref_sgd(Vec* param, const Vec& grad, Vec* velocity, double lr, double momentum, double wd);
/// One step of torch.optim.Adam (decoupled: AdamW) at 0-based |step|.
void ref_adam(Vec* param, const Vec& grad, Vec* m, Vec* v, double lr, double b1, double b2,
              double eps, double wd, bool decoupled, uint64_t step);

}  // namespace ops_test

#endif  // REMAT_TESTS_OPS_OP_REFERENCE_H_
