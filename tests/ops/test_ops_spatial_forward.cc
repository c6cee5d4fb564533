// Forward kernels of the spatial ops (conv to slice in plan/op_catalogue.h) against the float64
// references of op_reference_spatial.h, over every attribute combination of the shared problem
// tables, plus the hand-worked edge cases (argmax ties, NaN, ceil mode windows).
//
// Tolerances: sums of T float32 products of values in [-1, 1] (conv, avg pool, global avg
// pool): |got - want| <= 2e-6 * T + 1e-5 * |want| (float32 rounding grows at most linearly in
// T); batch norm's mean and var (values in [3, 5], up to 90 per channel) 1e-5 + 1e-5 * |want|;
// its normalised output 1e-4 (as layernorm's test: the statistics' rounding is amplified by
// rstd); running statistics 1e-6 + 1e-5 * |want| (one multiply-add). Max pool, pad, concat and
// slice only move values: exact.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/cmocka_cpp.h"
#include <math.h>

#include "op_harness.h"
#include "op_reference_spatial.h"
#include "plan/spatial_shape.h"

using namespace ops_test;
using remat::OpCode;

namespace {

constexpr double kRel = 1e-5;
double sum_tol(int64_t terms) { return 2e-6 * static_cast<double>(terms); }

// An output pre-filled with NaN, so that an element the kernel forgets to write fails.
Tensor nan_f32(const Dims& dims) {
  Tensor t = f32(dims);
  for (float& v : t.f) v = NAN;
  return t;
}

// As expect_close, but a NaN is wanted where |want| is NaN, and only there.
void expect_close_nan(const std::vector<float>& got, const Vec& want, double tol,
                      const char* what) {
  assert_int_equal(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (isnan(want[k]) != isnan(static_cast<double>(got[k]))) {
      fail_msg("%s: element %zu is %g, want %g", what, k, static_cast<double>(got[k]), want[k]);
    }
    if (!isnan(want[k]) && !(fabs(static_cast<double>(got[k]) - want[k]) <= tol)) {
      fail_msg("%s: element %zu is %.9g, want %.9g", what, k, static_cast<double>(got[k]), want[k]);
    }
  }
}

// Bit-for-bit equality with |want| (infinities included): for ops that only move values.
void expect_equal(const std::vector<float>& got, const Vec& want, const char* what) {
  assert_int_equal(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (!(static_cast<double>(got[k]) == want[k])) {
      fail_msg("%s: element %zu is %.9g, want %.9g", what, k, static_cast<double>(got[k]), want[k]);
    }
  }
}

// ---- conv ---------------------------------------------------------------------------------------

void conv_grad_input_workspace_is_present_exactly_where_the_contract_says(void**) {
  int with_workspace = 0;
  for (const ConvProblem& cp : conv_problems()) {
    const Dims x = cp.x_dims(), w = cp.w_dims();
    const remat::ConvShape shape = remat::conv_shape(x.data(), w.data(), static_cast<int>(x.size()),
                                                     remat::conv_attrs(cp.iattrs().data()));
    const int64_t got = remat::conv_grad_input_workspace_elems(shape);
    if (got != cp.grad_input_workspace() || shape.p != cp.p() || shape.q != cp.q()) {
      fail_msg("%s: workspace %lld, want %lld", cp.name, static_cast<long long>(got),
               static_cast<long long>(cp.grad_input_workspace()));
    }
    with_workspace += got > 0;
  }
  assert_true(with_workspace > 0);  // the table covers the col2im path
}

void run_conv_case(const ConvProblem& cp, bool with_bias, uint64_t seed) {
  Rng rng(seed);
  Tensor x = random_f32(cp.x_dims(), rng, -1, 1), w = random_f32(cp.w_dims(), rng, -1, 1);
  Tensor bias = random_f32({cp.k}, rng, -1, 1), y = nan_f32(cp.y_dims());
  std::vector<Tensor*> ins{&x, &w}, outs{&y};
  if (with_bias) ins.push_back(&bias);
  const RunResult r = run_op(OpCode::kConv, ins, outs, Attrs{cp.iattrs(), {}});
  if (r.status != REMAT_OK) fail_msg("%s: status %d (%s)", cp.name, r.status, r.message.c_str());
  const Vec want =
      ref_conv(cp, to_double(x.f), to_double(w.f), with_bias ? to_double(bias.f) : Vec());
  const int64_t terms = cp.c / cp.groups * cp.r * cp.s + 1;
  expect_close(y.f, want, sum_tol(terms), kRel, cp.name);
}

void conv_matches_reference_for_every_attribute_combination_with_and_without_bias(void**) {
  uint64_t seed = 300;
  for (const ConvProblem& cp : conv_problems()) {
    run_conv_case(cp, true, ++seed);
    run_conv_case(cp, false, ++seed);
  }
}

// Larger than a GEMM block in every direction: 32 x 3 x 3 = 288 reduction terms, 40 filters.
void conv_with_a_long_reduction_matches_reference(void**) {
  const ConvProblem cp{"32 to 40 channels", false, 2, 32, 12, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  run_conv_case(cp, true, 399);
}

// Unit-stride 3x3 convolutions of one group with 32 channels or more in and out run as
// Winograd's F(2x2, 3x3) (backends/cpu/conv/winograd.h): odd output sizes, padding 0 and 2,
// output channels not a multiple of 4, tiles over several blocks and threads (run_op: 3 threads
// to the bits of 1), the most channels a thread's scratch holds (128 + 104) and one more step
// (128 + 108: the direct path). test_ops_winograd_builds.cc checks that these take Winograd's.
void conv_by_winograd_matches_reference(void**) {
  // name, rank3, n, c, h, w, k, r, s, stride h w, pad h w, dilation h w, groups.
  const ConvProblem problems[] = {
      {"Winograd: 32 to 33 channels, 7x9 output", false, 3, 32, 7, 9, 33, 3, 3, 1, 1, 1, 1, 1, 1,
       1},
      {"Winograd: padding 0 and 2 on 10x6", false, 2, 40, 10, 6, 32, 3, 3, 1, 1, 0, 2, 1, 1, 1},
      {"Winograd: 128 to 104 channels on 6x6", false, 2, 128, 6, 6, 104, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"past Winograd's scratch: 128 to 108 on 4x4", false, 2, 128, 4, 4, 108, 3, 3, 1, 1, 1, 1, 1,
       1, 1},
  };
  uint64_t seed = 410;
  for (const ConvProblem& cp : problems) {
    run_conv_case(cp, seed % 2 == 0, seed);
    ++seed;
  }
}

// Unit stride with many channels: the padded image a thread copies for its columns takes
// several chunks of its scratch (400 channels), or does not fit at all and the column matrix is
// packed instead (700 channels of 32 padded columns). Whole padded 8x8 images of 256 channels a
// group fit two at a time; 512 filters take several M blocks of the product.
void conv_with_many_channels_matches_reference_in_chunks_and_past_the_scratch(void**) {
  run_conv_case({"400 to 8 channels on 20x20", false, 2, 400, 20, 20, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                true, 401);
  run_conv_case({"700 to 8 channels on 30x30", false, 1, 700, 30, 30, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
                false, 402);
  run_conv_case(
      {"512 to 8 channels in 2 groups on 8x8", false, 5, 512, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      true, 403);
  run_conv_case(
      {"8 to 512 channels in 2 groups on 8x8", false, 5, 8, 8, 8, 512, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      false, 404);
}

// ---- pooling ------------------------------------------------------------------------------------

void ceil_mode_adds_a_window_in_the_chosen_shapes(void**) {
  // The tests below are only worth something if ceil mode changes the output size somewhere
  // and if the "window starting in the padding" rule removes one somewhere.
  assert_int_equal(ref_pool_out_size(6, 3, 2, 1, false), 3);
  assert_int_equal(ref_pool_out_size(6, 3, 2, 1, true), 4);
  assert_int_equal(ref_pool_out_size(10, 2, 3, 0, true), 4);
  assert_int_equal(ref_pool_out_size(5, 2, 2, 1, true), 3);  // 4 would start in the padding.
  // Dilated: windows span dilation * (kernel - 1) + 1.
  assert_int_equal(ref_pool_out_size(9, 3, 1, 1, false, 2), 7);
  assert_int_equal(ref_pool_out_size(8, 3, 2, 1, true, 2), 4);
  int added = 0;
  for (PoolProblem pp : pool_problems()) {
    const int64_t floor_p = pp.p(), floor_q = pp.q();
    pp.ceil_mode = true;
    added += pp.p() > floor_p || pp.q() > floor_q;
  }
  assert_true(added >= 4);
}

void max_pool_matches_reference_with_padding_and_both_ceil_modes(void**) {
  uint64_t seed = 400;
  for (PoolProblem pp : max_pool_problems()) {
    for (bool ceil_mode : {false, true}) {
      pp.ceil_mode = ceil_mode;
      Rng rng(++seed);
      Tensor x = random_f32(pp.x_dims(), rng, -1, 1), y = nan_f32(pp.y_dims());
      const RunResult r = run_op(OpCode::kMaxPool, {&x}, {&y}, Attrs{pp.iattrs(false), {}});
      if (r.status != REMAT_OK)
        fail_msg("%s: status %d (%s)", pp.name, r.status, r.message.c_str());
      expect_close(y.f, ref_max_pool(pp, to_double(x.f)), 0.0, 0.0, pp.name);
    }
  }
}

void avg_pool_matches_reference_for_both_ceil_modes_and_both_pad_counts(void**) {
  uint64_t seed = 500;
  for (PoolProblem pp : pool_problems()) {
    for (int combo = 0; combo < 4; ++combo) {
      pp.ceil_mode = (combo & 1) != 0;
      pp.count_include_pad = (combo & 2) != 0;
      Rng rng(++seed);
      Tensor x = random_f32(pp.x_dims(), rng, -1, 1), y = nan_f32(pp.y_dims());
      const RunResult r = run_op(OpCode::kAvgPool, {&x}, {&y}, Attrs{pp.iattrs(true), {}});
      if (r.status != REMAT_OK)
        fail_msg("%s: status %d (%s)", pp.name, r.status, r.message.c_str());
      expect_close(y.f, ref_avg_pool(pp, to_double(x.f)), sum_tol(pp.kernel_h * pp.kernel_w), kRel,
                   pp.name);
    }
  }
}

// Worked by hand: 2x2 windows at stride 2 over one 4x4 image; the gradient shows the argmax.
void max_pool_argmax_of_a_tie_is_the_first_in_row_major_order(void**) {
  const PoolProblem pp{"2x2", false, 1, 1, 4, 4, 2, 2, 2, 2, 0, 0, false, false};
  // clang-format off
  Tensor x = f32({1, 1, 4, 4}, {1, 3,   2, 2,    // Window 0: 3 at (0,1) and (1,0); window 1:
                                3, 0,   2, 2,    // all 2.
                                -INFINITY, -INFINITY,   5, 4,    // Window 2: all -inf; window 3:
                                -INFINITY, -INFINITY,   5, 5});  // 5 three times.
  // clang-format on
  Tensor y = nan_f32({1, 1, 2, 2}), dy = f32({1, 1, 2, 2}, {10, 20, 30, 40});
  assert_int_equal(run_op(OpCode::kMaxPool, {&x}, {&y}, Attrs{pp.iattrs(false), {}}).status,
                   REMAT_OK);
  expect_equal(y.f, {3, 2, -INFINITY, 5}, "y");
  Tensor dx = f32({1, 1, 4, 4}, std::vector<float>(16, 7.0f));
  assert_int_equal(
      run_op(OpCode::kMaxPoolGrad, {&dy, &x}, {&dx}, Attrs{pp.iattrs(false), {}}).status, REMAT_OK);
  // clang-format off
  expect_close(dx.f, {0, 10, 20, 0,
                      0, 0, 0, 0,
                      30, 0, 40, 0,
                      0, 0, 0, 0}, 0.0, 0.0, "dx");
  // clang-format on
}

// A dilated window can hold no element of the input: 2x2 with dilation 3 and padding 1 over a
// 2x2 map has elements at -1 and 2 along each axis. Its output is -inf and it passes no gradient
// (torch gives -inf too, and writes out of bounds in its backward).
void max_pool_window_with_no_element_is_minus_infinity(void**) {
  PoolProblem pp{"empty", false, 1, 1, 2, 2, 2, 2, 1, 1, 1, 1, false, false, 3, 3};
  assert_int_equal(pp.p(), 1);
  assert_int_equal(pp.q(), 1);
  Tensor x = f32(pp.x_dims()), y = nan_f32(pp.y_dims());
  x.f = {1.0f, 2.0f, 3.0f, 4.0f};
  assert_int_equal(run_op(OpCode::kMaxPool, {&x}, {&y}, Attrs{pp.iattrs(false), {}}).status,
                   REMAT_OK);
  assert_true(isinf(y.f[0]) && y.f[0] < 0);
  Tensor dy = f32(pp.y_dims()), dx = nan_f32(pp.x_dims());
  dy.f = {5.0f};
  assert_int_equal(
      run_op(OpCode::kMaxPoolGrad, {&dy, &x}, {&dx}, Attrs{pp.iattrs(false), {}}).status, REMAT_OK);
  for (float v : dx.f) assert_true(v == 0.0f);
}

// torch.max_pool2d propagates NaN: a window holding one gives NaN, and the gradient goes to it.
void max_pool_propagates_nan_as_torch(void**) {
  PoolProblem pp = pool_problems()[0];  // 3x3, stride 2, padding 1: windows overlap.
  Rng rng(450);
  Tensor x = random_f32(pp.x_dims(), rng, -1, 1), y = nan_f32(pp.y_dims());
  const size_t nan_at = static_cast<size_t>(2 * pp.w + 2);  // (2, 2) of image 0, channel 0.
  x.f[nan_at] = NAN;
  x.f[nan_at + 1] = 100.0f;  // A larger number in the same windows must not win.
  assert_int_equal(run_op(OpCode::kMaxPool, {&x}, {&y}, Attrs{pp.iattrs(false), {}}).status,
                   REMAT_OK);
  expect_close_nan(y.f, ref_max_pool(pp, to_double(x.f)), 0.0, "y");
  // Output (1, 1) covers rows and columns 1..3: the NaN and the 100 are in it, the NaN wins and
  // takes its dy.
  Tensor dy = f32(pp.y_dims()), dx = f32(pp.x_dims());
  const int64_t q = pp.q();
  dy.f[static_cast<size_t>(q + 1)] = 1.0f;
  assert_int_equal(
      run_op(OpCode::kMaxPoolGrad, {&dy, &x}, {&dx}, Attrs{pp.iattrs(false), {}}).status, REMAT_OK);
  Vec want(dx.f.size(), 0.0);
  want[nan_at] = 1.0;
  expect_close(dx.f, want, 0.0, 0.0, "dx");
}

void global_avg_pool_matches_reference_on_rank_3_and_4(void**) {
  Rng rng(460);
  for (const Dims& d : {Dims{2, 3, 4, 5}, Dims{3, 4, 7}}) {
    const int64_t spatial = d.size() == 4 ? d[2] * d[3] : d[2];
    Tensor x = random_f32(d, rng, -1, 1), y = nan_f32({d[0], d[1]});
    assert_int_equal(run_op(OpCode::kGlobalAvgPool, {&x}, {&y}).status, REMAT_OK);
    expect_close(y.f, ref_global_avg_pool(to_double(x.f), d[0], d[1], spatial), sum_tol(spatial),
                 kRel, "global_avg_pool");
  }
}

// ---- batch norm ---------------------------------------------------------------------------------

// Offset data (values in [3, 5]) so that a one-pass variance would lose digits.
void batch_norm_matches_reference_on_rank_2_3_and_4_with_its_statistics(void**) {
  Rng rng(470);
  for (const Dims& d : {Dims{16, 3}, Dims{4, 3, 9}, Dims{3, 4, 5, 6}}) {
    const int64_t c = d[1], spatial = d.size() == 2 ? 1 : d.size() == 3 ? d[2] : d[2] * d[3];
    Tensor x = random_f32(d, rng, 3, 5), gamma = random_f32({c}, rng, 0.5, 1.5);
    Tensor beta = random_f32({c}, rng, -1, 1), y = nan_f32(d), mean = nan_f32({c}),
           var = nan_f32({c});
    assert_int_equal(
        run_op(OpCode::kBatchNorm, {&x, &gamma, &beta}, {&y, &mean, &var}, Attrs{{}, {1e-5f}})
            .status,
        REMAT_OK);
    Vec wy, wm, wv;
    ref_batch_norm(to_double(x.f), to_double(gamma.f), to_double(beta.f), d[0], c, spatial, 1e-5,
                   &wy, &wm, &wv);
    expect_close(y.f, wy, 1e-4, 1e-4, "y");
    expect_close(mean.f, wm, 1e-5, kRel, "mean");
    expect_close(var.f, wv, 1e-5, kRel, "var");
  }
}

void batch_norm_inference_matches_reference(void**) {
  Rng rng(471);
  for (const Dims& d : {Dims{5, 4}, Dims{2, 3, 7}, Dims{2, 3, 4, 5}}) {
    const int64_t c = d[1], spatial = d.size() == 2 ? 1 : d.size() == 3 ? d[2] : d[2] * d[3];
    Tensor x = random_f32(d, rng, -2, 2), gamma = random_f32({c}, rng, 0.5, 1.5);
    Tensor beta = random_f32({c}, rng, -1, 1), rm = random_f32({c}, rng, -1, 1);
    Tensor rv = random_f32({c}, rng, 0.1, 2), y = nan_f32(d);
    assert_int_equal(
        run_op(OpCode::kBatchNormInference, {&x, &gamma, &beta, &rm, &rv}, {&y}, Attrs{{}, {1e-3f}})
            .status,
        REMAT_OK);
    expect_close(y.f,
                 ref_batch_norm_inference(to_double(x.f), to_double(gamma.f), to_double(beta.f),
                                          to_double(rm.f), to_double(rv.f), d[0], c, spatial, 1e-3),
                 1e-5, 1e-5, "batch_norm_inference");
  }
}

// torch: running_mean = 0.9 running_mean + 0.1 mean; running_var = 0.9 running_var + 0.1 *
// var * M / (M - 1) (the unbiased batch variance), in place.
void running_stat_update_follows_torch_with_momentum_0_1(void**) {
  Rng rng(472);
  const Dims d{4, 3, 2, 3};
  const int64_t m = 4 * 2 * 3;
  Tensor x = random_f32(d, rng, -1, 2), gamma = f32({3}, {1, 1, 1}), beta = f32({3});
  Tensor y = f32(d), mean = f32({3}), var = f32({3});
  assert_int_equal(
      run_op(OpCode::kBatchNorm, {&x, &gamma, &beta}, {&y, &mean, &var}, Attrs{{}, {1e-5f}}).status,
      REMAT_OK);
  Tensor run_mean = f32({3}, {0.5f, -0.25f, 0.0f}), run_var = f32({3}, {1.0f, 2.0f, 0.5f});
  const Vec old_mean = to_double(run_mean.f), old_var = to_double(run_var.f);
  const float correction = static_cast<float>(m) / static_cast<float>(m - 1);
  assert_int_equal(
      run_op(OpCode::kRunningStatUpdate, {&run_mean, &mean}, {&run_mean}, Attrs{{}, {0.1f, 1.0f}})
          .status,
      REMAT_OK);
  assert_int_equal(run_op(OpCode::kRunningStatUpdate, {&run_var, &var}, {&run_var},
                          Attrs{{}, {0.1f, correction}})
                       .status,
                   REMAT_OK);
  Vec bm, bv, unused;
  ref_batch_norm(to_double(x.f), to_double(gamma.f), to_double(beta.f), 4, 3, 6, 1e-5, &unused, &bm,
                 &bv);
  Vec want_mean(3), want_var(3);
  for (size_t k = 0; k < 3; ++k) {
    want_mean[k] = 0.9 * old_mean[k] + 0.1 * bm[k];
    want_var[k] =
        0.9 * old_var[k] + 0.1 * bv[k] * static_cast<double>(m) / static_cast<double>(m - 1);
  }
  expect_close(run_mean.f, want_mean, 1e-6, kRel, "running_mean");
  expect_close(run_var.f, want_var, 1e-6, kRel, "running_var");
}

// ---- pad, concat, slice -------------------------------------------------------------------------

void pad_matches_reference_on_rank_4_and_rank_3(void**) {
  Rng rng(480);
  Tensor x = random_f32({2, 3, 4, 5}, rng, -1, 1), y = nan_f32({2, 3, 4 + 1 + 2, 5 + 3 + 0});
  assert_int_equal(run_op(OpCode::kPad, {&x}, {&y}, Attrs{{1, 2, 3, 0}, {-1.5f}}).status, REMAT_OK);
  expect_close(y.f, ref_pad(to_double(x.f), 2, 3, 4, 5, 1, 2, 3, 0, -1.5), 0.0, 0.0, "pad rank 4");
  Tensor x3 = random_f32({2, 3, 6}, rng, -1, 1), y3 = nan_f32({2, 3, 6 + 2 + 1});
  assert_int_equal(run_op(OpCode::kPad, {&x3}, {&y3}, Attrs{{0, 0, 2, 1}, {0.0f}}).status,
                   REMAT_OK);
  expect_close(y3.f, ref_pad(to_double(x3.f), 2, 3, 1, 6, 0, 0, 2, 1, 0.0), 0.0, 0.0, "pad rank 3");
}

void check_concat(const std::vector<Dims>& dims, int64_t axis, uint64_t seed, const char* what) {
  Rng rng(seed);
  std::vector<Tensor> parts;
  std::vector<Vec> values;
  Dims out = dims[0];
  out[static_cast<size_t>(axis)] = 0;
  for (const Dims& d : dims) {
    parts.push_back(random_f32(d, rng, -1, 1));
    values.push_back(to_double(parts.back().f));
    out[static_cast<size_t>(axis)] += d[static_cast<size_t>(axis)];
  }
  std::vector<Tensor*> ins;
  for (Tensor& t : parts) ins.push_back(&t);
  Tensor y = nan_f32(out);
  assert_int_equal(run_op(OpCode::kConcat, ins, {&y}, Attrs{{axis}, {}}).status, REMAT_OK);
  expect_close(y.f, ref_concat(values, dims, axis), 0.0, 0.0, what);
}

void concat_of_two_and_three_inputs_along_axis_1_and_axis_0_matches_reference(void**) {
  check_concat({{2, 3, 4, 5}, {2, 2, 4, 5}}, 1, 490, "2 inputs, axis 1");
  check_concat({{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, 1, 491, "3 inputs, axis 1");
  check_concat({{1, 3, 4}, {3, 3, 4}, {2, 3, 4}}, 0, 492, "3 inputs, axis 0");
  check_concat({{2, 3}, {4, 3}}, 0, 493, "2 inputs, axis 0");
  check_concat({{2, 3, 2}, {2, 3, 5}, {2, 3, 1}}, 2, 494, "3 inputs, last axis");
}

void slice_matches_reference_along_first_middle_and_last_axes(void**) {
  Rng rng(495);
  const Dims d{3, 5, 4};
  Tensor x = random_f32(d, rng, -1, 1);
  const Vec xv = to_double(x.f);
  const int64_t cases[][3] = {{1, 2, 3}, {0, 1, 2}, {2, 0, 1}, {1, 0, 5}};  // axis, offset, length.
  for (const auto& c : cases) {
    Dims out = d;
    out[static_cast<size_t>(c[0])] = c[2];
    Tensor y = nan_f32(out);
    assert_int_equal(run_op(OpCode::kSlice, {&x}, {&y}, Attrs{{c[0], c[1]}, {}}).status, REMAT_OK);
    expect_close(y.f, ref_slice(xv, d, c[0], c[1], c[2]), 0.0, 0.0, "slice");
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(conv_grad_input_workspace_is_present_exactly_where_the_contract_says),
      cmocka_unit_test(
          conv_matches_reference_for_every_attribute_combination_with_and_without_bias),
      cmocka_unit_test(conv_with_a_long_reduction_matches_reference),
      cmocka_unit_test(conv_by_winograd_matches_reference),
      cmocka_unit_test(conv_with_many_channels_matches_reference_in_chunks_and_past_the_scratch),
      cmocka_unit_test(ceil_mode_adds_a_window_in_the_chosen_shapes),
      cmocka_unit_test(max_pool_matches_reference_with_padding_and_both_ceil_modes),
      cmocka_unit_test(avg_pool_matches_reference_for_both_ceil_modes_and_both_pad_counts),
      cmocka_unit_test(max_pool_argmax_of_a_tie_is_the_first_in_row_major_order),
      cmocka_unit_test(max_pool_propagates_nan_as_torch),
      cmocka_unit_test(max_pool_window_with_no_element_is_minus_infinity),
      cmocka_unit_test(global_avg_pool_matches_reference_on_rank_3_and_4),
      cmocka_unit_test(batch_norm_matches_reference_on_rank_2_3_and_4_with_its_statistics),
      cmocka_unit_test(batch_norm_inference_matches_reference),
      cmocka_unit_test(running_stat_update_follows_torch_with_momentum_0_1),
      cmocka_unit_test(pad_matches_reference_on_rank_4_and_rank_3),
      cmocka_unit_test(concat_of_two_and_three_inputs_along_axis_1_and_axis_0_matches_reference),
      cmocka_unit_test(slice_matches_reference_along_first_middle_and_last_axes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
