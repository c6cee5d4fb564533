// Shared helpers of the op tests: host tensors over std::vector, running one CPU kernel on
// them, seeded random data, finite differences and tolerance checks.
#ifndef REMAT_TESTS_OPS_OP_HARNESS_H_
#define REMAT_TESTS_OPS_OP_HARNESS_H_

#include <stdint.h>

#include <functional>
#include <string>
#include <vector>

#include "plan/ops.h"
#include "runtime/backend.h"

namespace ops_test {

/// A host tensor: f32 data in |f| or i32 data in |i|, row-major over |dims|.
struct Tensor {
  std::vector<int64_t> dims;
  remat_dtype dtype = REMAT_DTYPE_F32;
  std::vector<float> f;
  std::vector<int32_t> i;

  int64_t numel() const;
  void* data() { return dtype == REMAT_DTYPE_I32 ? static_cast<void*>(i.data()) : f.data(); }
};

/// An f32 tensor of |dims|, zero-filled when |values| is empty.
Tensor f32(const std::vector<int64_t>& dims, const std::vector<float>& values = {});
/// An i32 tensor of |dims| holding |values|.
Tensor i32(const std::vector<int64_t>& dims, const std::vector<int32_t>& values);

/// Seeded generator (splitmix64): every test draws the same numbers on every run.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform(double lo, double hi);
  /// Uniform values with |x| >= |gap|: keeps inputs away from kinks such as relu's at 0.
  double uniform_away_from_zero(double lo, double hi, double gap);

 private:
  uint64_t state_;
};

/// An f32 tensor of |dims| with values uniform in [lo, hi).
Tensor random_f32(const std::vector<int64_t>& dims, Rng& rng, double lo, double hi);

/// What one kernel run returned.
struct RunResult {
  remat_status status;
  std::string message;  ///< The ErrorBuffer's text (empty when the kernel wrote none).
};

/// Attributes and step context of one run; defaults: none, seed 1234, step 0.
struct Attrs {
  std::vector<int64_t> i;
  std::vector<float> f;
  remat::StepContext ctx{1234, 0};
};

/// Runs the CPU kernel of |code| on |ins| -> |outs| (outputs already shaped by the caller; in
/// place ops pass the same Tensor in both lists). Fails the test when no kernel exists.
RunResult run_op(remat::OpCode code, const std::vector<Tensor*>& ins,
                 const std::vector<Tensor*>& outs, const Attrs& attrs = Attrs());

/// Runs the CPU kernel of |code| once on |threads| threads (1 to 3: the team run_op uses),
/// without run_op's comparison, for tests that compare the bits of several thread counts.
RunResult run_op_on_threads(remat::OpCode code, const std::vector<Tensor*>& ins,
                            const std::vector<Tensor*>& outs, const Attrs& attrs, uint32_t threads);

/// Float values widened to double.
std::vector<double> to_double(const std::vector<float>& v);
/// Double values rounded to float.
std::vector<float> to_float(const std::vector<double>& v);

/// Central finite differences of |f| at |x|: one entry per element of |x|.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f,
                                 std::vector<double> x, double h = 1e-5);

/// sum(w * y): the scalar objective the gradient tests differentiate.
double weighted_sum(const std::vector<double>& w, const std::vector<double>& y);

/// Gradient of L = sum(w * y(x)) with respect to |x| by central finite differences.
std::vector<double> fd_of(const std::function<std::vector<double>(const std::vector<double>&)>& y,
                          const std::vector<double>& x, const std::vector<double>& w);

/// The gradient tests' check of a kernel's |got| against finite differences |fd|:
/// |got - fd| <= 1e-3 + 1e-3 * |fd| (test_ops_gradients.cc says why).
void expect_grad(const std::vector<float>& got, const std::vector<double>& fd, const char* what);

/// Fails the test with the first |got[i]| that differs from |want[i]| by more than
/// abs_tol + rel_tol * |want[i]|, naming |what| and the index.
void expect_close(const std::vector<float>& got, const std::vector<double>& want, double abs_tol,
                  double rel_tol, const char* what);

/// Swaps the last two dims of a [batch, rows, cols] array.
std::vector<float> transpose_last2(const std::vector<float>& v, int64_t batch, int64_t rows,
                                   int64_t cols);

}  // namespace ops_test

#endif  // REMAT_TESTS_OPS_OP_HARNESS_H_
