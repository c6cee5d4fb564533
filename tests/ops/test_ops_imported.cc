// The ops that imported models use (pow_scalar, square_root, leaky_relu, error_function,
// log_softmax, reduce_sum, broadcast, fill): every forward kernel against a float64 reference
// written here from the catalogue, every backward kernel against central finite differences
// of that reference, and the exact cases torch computes exactly (x^2, a leaky ReLU, a sum's
// broadcast) compared bit for bit.
//
// Tolerances as test_ops_forward.cc (1e-5 relative and absolute) and test_ops_gradients.cc
// (1e-3).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/cmocka_cpp.h"
#include "backends/cpu/ops/work_splits.h"
#include <math.h>

#include "op_harness.h"
#include "op_reference.h"

using namespace ops_test;
using remat::OpCode;

namespace {

constexpr double kTol = 1e-5;

Vec apply(const Vec& x, const std::function<double(double)>& f) {
  Vec y(x);
  for (double& v : y) v = f(v);
  return y;
}

// Runs the unary forward |code| on |x| and compares it with |f|; then its gradient op, which
// reads (dy, x) or (dy, y) as |grad_reads_output| says, against finite differences of |f|.
void check_unary_pair(OpCode code, OpCode grad_code, bool grad_reads_output, const Tensor& x_in,
                      const std::function<double(double)>& f, const Attrs& attrs, uint64_t seed) {
  Rng rng(seed);
  Tensor x = x_in, y = f32(x_in.dims);
  assert_int_equal(run_op(code, {&x}, {&y}, attrs).status, REMAT_OK);
  const Vec xv = to_double(x.f);
  expect_close(y.f, apply(xv, f), kTol, kTol, remat::op_name(static_cast<uint16_t>(code)));
  Tensor dy = random_f32(x.dims, rng, -1, 1), dx = f32(x.dims);
  Tensor& saved = grad_reads_output ? y : x;
  assert_int_equal(run_op(grad_code, {&dy, &saved}, {&dx}, attrs).status, REMAT_OK);
  expect_grad(dx.f, fd_of([&](const Vec& v) { return apply(v, f); }, xv, to_double(dy.f)),
              remat::op_name(static_cast<uint16_t>(grad_code)));
}

void powers_match_reference_and_finite_differences(void**) {
  Rng rng(200);
  // Positive bases for fractional exponents; any sign for the integer ones.
  for (float p : {2.0f, 3.0f, -1.0f, 1.0f}) {
    Tensor x = f32({4, 9});
    for (float& v : x.f) v = static_cast<float>(rng.uniform_away_from_zero(-2, 2, 0.2));
    check_unary_pair(
        OpCode::kPowScalar, OpCode::kPowScalarGrad, false, x, [p](double v) { return pow(v, p); },
        Attrs{{}, {p}}, 201);
  }
  for (float p : {0.5f, -0.5f, 1.5f, -2.25f, 0.0f}) {
    Tensor x = random_f32({4, 9}, rng, 0.2, 3);
    check_unary_pair(
        OpCode::kPowScalar, OpCode::kPowScalarGrad, false, x, [p](double v) { return pow(v, p); },
        Attrs{{}, {p}}, 202);
  }
}

// x^2 is x * x, and its gradient dy * (2 * x), each rounded once as torch computes them.
void square_is_exact_as_torch_computes_it(void**) {
  Rng rng(203);
  Tensor x = random_f32({64}, rng, -3, 3), y = f32({64}), dy = random_f32({64}, rng, -1, 1),
         dx = f32({64});
  run_op(OpCode::kPowScalar, {&x}, {&y}, Attrs{{}, {2.0f}});
  run_op(OpCode::kPowScalarGrad, {&dy, &x}, {&dx}, Attrs{{}, {2.0f}});
  for (size_t i = 0; i < 64; ++i) {
    const float sq = x.f[i] * x.f[i];
    const float two_x = 2.0f * x.f[i];
    const float g = dy.f[i] * two_x;
    assert_memory_equal(&y.f[i], &sq, sizeof(float));
    assert_memory_equal(&dx.f[i], &g, sizeof(float));
  }
}

void square_root_matches_reference_and_finite_differences(void**) {
  Rng rng(204);
  Tensor x = random_f32({5, 7}, rng, 0.1, 4);
  check_unary_pair(
      OpCode::kSquareRoot, OpCode::kSquareRootGrad, true, x, [](double v) { return sqrt(v); },
      Attrs(), 205);
}

void leaky_relu_matches_reference_and_finite_differences(void**) {
  Rng rng(206);
  Tensor x = f32({5, 7});
  for (float& v : x.f) v = static_cast<float>(rng.uniform_away_from_zero(-3, 3, 0.1));
  for (float alpha : {0.01f, 0.2f, -0.5f}) {
    check_unary_pair(
        OpCode::kLeakyRelu, OpCode::kLeakyReluGrad, false, x,
        [alpha](double v) { return v > 0 ? v : v * static_cast<double>(alpha); },
        Attrs{{}, {alpha}}, 207);
  }
}

// Clip (relu6's bounds, and a window around zero) and hard_sigmoid (torch's 1/6 and 0.5, and
// ONNX's default 0.2 and 0.5), x kept away from the kinks so that finite differences see one side.
void clip_and_hard_sigmoid_match_reference_and_finite_differences(void**) {
  Rng rng(210);
  Tensor x = f32({5, 7});
  for (float& v : x.f) v = static_cast<float>(rng.uniform_away_from_zero(-8, 8, 0.1));
  const float bounds[][2] = {{0.0f, 6.0f}, {-1.5f, 2.5f}};
  for (const auto& b : bounds) {
    const double low = b[0], high = b[1];
    Tensor away = x;  // and away from the bounds
    for (float& v : away.f) {
      if (fabs(v - low) < 0.1) v += 0.2f;
      if (fabs(v - high) < 0.1) v -= 0.2f;
    }
    check_unary_pair(
        OpCode::kClip, OpCode::kClipGrad, false, away,
        [low, high](double v) { return v < low    ? low
                                       : v > high ? high
                                                  : v; },
        Attrs{{}, {b[0], b[1]}}, 211);
  }
  const float slopes[][2] = {{1.0f / 6.0f, 0.5f}, {0.2f, 0.5f}};
  for (const auto& s : slopes) {
    const double alpha = s[0], beta = s[1];
    Tensor away = x;  // t = alpha x + beta away from 0 and 1
    for (float& v : away.f) {
      const double t = alpha * v + beta;
      if (fabs(t) < 0.02 || fabs(t - 1.0) < 0.02) v += 0.5f;
    }
    check_unary_pair(
        OpCode::kHardSigmoid, OpCode::kHardSigmoidGrad, false, away,
        [alpha, beta](double v) {
          const double t = alpha * v + beta;
          return t < 0 ? 0.0 : t > 1 ? 1.0 : t;
        },
        Attrs{{}, {s[0], s[1]}}, 212);
  }
}

// At the bounds the gradient is 0, as torch's hardtanh_backward gives it.
void clip_grad_is_zero_at_and_past_the_bounds(void**) {
  Tensor dy = f32({5}, {1, 1, 1, 1, 1}), x = f32({5}, {-1.0f, 0.0f, 3.0f, 6.0f, 7.0f}),
         dx = f32({5});
  assert_int_equal(run_op(OpCode::kClipGrad, {&dy, &x}, {&dx}, Attrs{{}, {0.0f, 6.0f}}).status,
                   REMAT_OK);
  const float want[] = {0, 0, 1, 0, 0};
  for (int k = 0; k < 5; ++k) {
    if (dx.f[k] != want[k]) fail_msg("clip_grad at x = %g: %g, want %g", x.f[k], dx.f[k], want[k]);
  }
}

void error_function_matches_reference_and_finite_differences(void**) {
  Rng rng(208);
  Tensor x = random_f32({5, 7}, rng, -3, 3);
  check_unary_pair(
      OpCode::kErrorFunction, OpCode::kErrorFunctionGrad, false, x, [](double v) { return erf(v); },
      Attrs(), 209);
}

Vec ref_log_softmax(const Vec& x, int64_t n) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
    const double* xr = x.data() + r * n;
    double mx = xr[0];
    for (int64_t j = 1; j < n; ++j) mx = fmax(mx, xr[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) sum += exp(xr[j] - mx);
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = xr[j] - mx - log(sum);
  }
  return y;
}

void log_softmax_matches_reference_and_finite_differences(void**) {
  Rng rng(210);
  Tensor x = random_f32({4, 50}, rng, -5, 5), y = f32({4, 50});
  for (size_t i = 0; i < 50; ++i) x.f[i] += 1000.0f;  // exp(1000) overflows unless shifted.
  run_op(OpCode::kLogSoftmax, {&x}, {&y});
  expect_close(y.f, ref_log_softmax(to_double(x.f), 50), 1e-4, kTol, "log_softmax");
  Tensor xs = random_f32({3, 6}, rng, -2, 2), ys = f32({3, 6});
  Tensor dy = random_f32({3, 6}, rng, -1, 1), dx = f32({3, 6});
  run_op(OpCode::kLogSoftmax, {&xs}, {&ys});
  run_op(OpCode::kLogSoftmaxGrad, {&dy, &ys}, {&dx});
  expect_grad(
      dx.f,
      fd_of([](const Vec& v) { return ref_log_softmax(v, 6); }, to_double(xs.f), to_double(dy.f)),
      "log_softmax_grad");
}

// Sum (or mean) of x viewed as [outer, n, inner] over n.
Vec ref_reduce(const Vec& x, int64_t outer, int64_t n, int64_t inner, bool mean) {
  Vec y(static_cast<size_t>(outer * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) y[o * inner + i] += x[(o * n + j) * inner + i];
    }
  }
  if (mean) {
    for (double& v : y) v /= static_cast<double>(n);
  }
  return y;
}

Vec ref_broadcast(const Vec& x, int64_t outer, int64_t n, int64_t inner, bool mean) {
  Vec y(static_cast<size_t>(outer * n * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        y[(o * n + j) * inner + i] = x[o * inner + i] / (mean ? static_cast<double>(n) : 1.0);
      }
    }
  }
  return y;
}

// Every placement of the reduced axes (leading, middle, trailing, all), with inner rows wider
// than the kernel's column block, sum and mean; broadcast is the gradient of each.
void reduce_sum_and_broadcast_match_reference_and_finite_differences(void**) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis, count, outer, n, inner;
  };
  const Shape shapes[] = {
      {{3, 4, 5, 6}, 1, 2, 3, 20, 6}, {{3, 4, 5, 6}, 0, 1, 1, 3, 120},
      {{3, 4, 5, 6}, 3, 1, 60, 6, 1}, {{3, 4, 5, 6}, 0, 4, 1, 360, 1},
      {{2, 3, 300}, 1, 1, 2, 3, 300},
  };
  Rng rng(211);
  for (const Shape& s : shapes) {
    for (int64_t mean = 0; mean < 2; ++mean) {
      const Attrs attrs{{s.axis, s.count, mean}, {}};
      Tensor x = random_f32(s.dims, rng, -1, 1), y = f32({s.outer * s.inner});
      assert_int_equal(run_op(OpCode::kReduceSum, {&x}, {&y}, attrs).status, REMAT_OK);
      const Vec xv = to_double(x.f);
      expect_close(y.f, ref_reduce(xv, s.outer, s.n, s.inner, mean != 0), kTol, kTol, "reduce_sum");
      // The gradient of reduce_sum is broadcast (finite differences of the reference sum) ...
      Tensor dy = random_f32({s.outer * s.inner}, rng, -1, 1), dx = f32(s.dims);
      assert_int_equal(run_op(OpCode::kBroadcast, {&dy}, {&dx}, attrs).status, REMAT_OK);
      expect_grad(
          dx.f,
          fd_of([&](const Vec& v) { return ref_reduce(v, s.outer, s.n, s.inner, mean != 0); }, xv,
                to_double(dy.f)),
          "broadcast as reduce_sum's gradient");
      // ... and the gradient of broadcast is reduce_sum.
      const Vec dyv = to_double(dy.f);
      Tensor up = random_f32(s.dims, rng, -1, 1), back = f32({s.outer * s.inner});
      assert_int_equal(run_op(OpCode::kReduceSum, {&up}, {&back}, attrs).status, REMAT_OK);
      expect_grad(
          back.f,
          fd_of([&](const Vec& v) { return ref_broadcast(v, s.outer, s.n, s.inner, mean != 0); },
                dyv, to_double(up.f)),
          "reduce_sum as broadcast's gradient");
    }
  }
}

// reduce_sum's column block (backends/cpu/ops/work_splits.h): inner widths one short of a block,
// one block, one past, and past three blocks, with outer rows enough for the threads to share
// the (outer, block) units; run_op compares 1, 2 and 3 threads bit for bit.
void reduce_sum_matches_reference_around_its_column_block(void**) {
  constexpr int64_t kBlock = remat::cpu::kReduceColumnBlock;
  Rng rng(212);
  for (const int64_t inner : {kBlock - 1, kBlock, kBlock + 1, 3 * kBlock + 1}) {
    const int64_t outer = 3, n = 5;
    const Attrs attrs{{1, 1, 0}, {}};
    Tensor x = random_f32({outer, n, inner}, rng, -1, 1), y = f32({outer * inner});
    assert_int_equal(run_op(OpCode::kReduceSum, {&x}, {&y}, attrs).status, REMAT_OK);
    expect_close(y.f, ref_reduce(to_double(x.f), outer, n, inner, false), kTol, kTol,
                 "reduce_sum around the column block");
  }
}

// A sum of many values is accumulated in double: 2^24 + 1 + 1 ... stays exact where a float sum
// would lose every 1.
void reduce_sum_accumulates_in_double(void**) {
  Tensor x = f32({1001, 2});
  x.f[0] = 16777216.0f;
  x.f[1] = 3.0f;
  for (size_t i = 2; i < x.f.size(); ++i) x.f[i] = 1.0f;
  Tensor y = f32({2});
  run_op(OpCode::kReduceSum, {&x}, {&y}, Attrs{{0, 1, 0}, {}});
  assert_true(y.f[0] == 16777216.0f + 1000.0f);
  assert_true(y.f[1] == 1003.0f);
}

void fill_writes_its_value_everywhere(void**) {
  Tensor y = f32({3, 5}, std::vector<float>(15, NAN));
  assert_int_equal(run_op(OpCode::kFill, {}, {&y}, Attrs{{}, {1.0f}}).status, REMAT_OK);
  for (float v : y.f) assert_true(v == 1.0f);
  assert_int_equal(run_op(OpCode::kFill, {}, {&y}, Attrs{{}, {-2.5f}}).status, REMAT_OK);
  for (float v : y.f) assert_true(v == -2.5f);
}

// NaN stays NaN through every new op (a non-finite guard downstream must see it).
void nan_propagates_through_the_new_ops(void**) {
  Tensor x = f32({4}, {NAN, 1.0f, 2.0f, NAN}), y = f32({4});
  const struct {
    OpCode code;
    Attrs attrs;
  } ops[] = {
      {OpCode::kPowScalar, Attrs{{}, {2.0f}}},  {OpCode::kPowScalar, Attrs{{}, {1.5f}}},
      {OpCode::kSquareRoot, Attrs()},           {OpCode::kLeakyRelu, Attrs{{}, {0.1f}}},
      {OpCode::kErrorFunction, Attrs()},        {OpCode::kLogSoftmax, Attrs()},
      {OpCode::kClip, Attrs{{}, {0.0f, 6.0f}}}, {OpCode::kHardSigmoid, Attrs{{}, {0.2f, 0.5f}}}};
  for (const auto& op : ops) {
    assert_int_equal(run_op(op.code, {&x}, {&y}, op.attrs).status, REMAT_OK);
    if (!isnan(y.f[0]) || !isnan(y.f[3])) {
      fail_msg("%s(nan) gave %g, %g", remat::op_name(static_cast<uint16_t>(op.code)), y.f[0],
               y.f[3]);
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(powers_match_reference_and_finite_differences),
      cmocka_unit_test(square_is_exact_as_torch_computes_it),
      cmocka_unit_test(square_root_matches_reference_and_finite_differences),
      cmocka_unit_test(leaky_relu_matches_reference_and_finite_differences),
      cmocka_unit_test(clip_and_hard_sigmoid_match_reference_and_finite_differences),
      cmocka_unit_test(clip_grad_is_zero_at_and_past_the_bounds),
      cmocka_unit_test(error_function_matches_reference_and_finite_differences),
      cmocka_unit_test(log_softmax_matches_reference_and_finite_differences),
      cmocka_unit_test(reduce_sum_and_broadcast_match_reference_and_finite_differences),
      cmocka_unit_test(reduce_sum_matches_reference_around_its_column_block),
      cmocka_unit_test(reduce_sum_accumulates_in_double),
      cmocka_unit_test(fill_writes_its_value_everywhere),
      cmocka_unit_test(nan_propagates_through_the_new_ops),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
