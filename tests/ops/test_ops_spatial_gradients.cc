// Every backward kernel of the spatial ops against float64 central finite differences of the
// independent float64 forwards of op_reference_spatial.h, with L = sum(w * y) and random w, over
// every attribute combination of the shared conv and pool tables (stride, padding, dilation,
// groups, depthwise, 1x1 at stride 1 and 2, conv1d; ceil mode and count_include_pad).
//
// Tolerance: |kernel - fd| <= 1e-3 + 1e-3 * |fd|, as tests/ops/test_ops_gradients.cc: the
// differences are float64 (h = 1e-5, truncation near 1e-10), so the budget is the kernels'
// float32 rounding of sums of at most a few hundred O(1) terms, below 1e-4. Max-pool inputs are
// distinct values 1e-2 apart, so no step of size h changes an argmax. Outputs the kernels
// overwrite are pre-filled with garbage, which must not survive.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/cmocka_cpp.h"
#include <math.h>
#include <stdio.h>

#include <algorithm>

#include "op_harness.h"
#include "op_reference_spatial.h"

using namespace ops_test;
using remat::OpCode;

namespace {

// A gradient output pre-filled with a value the kernel must overwrite (or zero before adding).
Tensor garbage_f32(const Dims& dims) {
  Tensor t = f32(dims);
  for (float& v : t.f) v = 123.0f;
  return t;
}

void expect_ok(const RunResult& r, const char* what) {
  if (r.status != REMAT_OK) fail_msg("%s: status %d (%s)", what, r.status, r.message.c_str());
}

// "what (case name)" for messages.
struct Label {
  char text[160];
  Label(const char* what, const char* name) { snprintf(text, sizeof(text), "%s (%s)", what, name); }
};

// ---- conv: dx, dw and db ------------------------------------------------------------------------

void conv_backward_matches_finite_differences_for_every_attribute_combination(void**) {
  uint64_t seed = 600;
  for (const ConvProblem& cp : conv_problems()) {
    Rng rng(++seed);
    Tensor x = random_f32(cp.x_dims(), rng, -1, 1), w = random_f32(cp.w_dims(), rng, -1, 1);
    Tensor bias = random_f32({cp.k}, rng, -1, 1), dy = random_f32(cp.y_dims(), rng, -1, 1);
    const Vec xv = to_double(x.f), wv = to_double(w.f), bv = to_double(bias.f), g = to_double(dy.f);
    const Attrs attrs{cp.iattrs(), {}};
    const int64_t ws_elems = cp.grad_input_workspace();
    Tensor ws = garbage_f32({ws_elems > 0 ? ws_elems : 1});
    auto with_ws = [&](Tensor* out) {
      return ws_elems > 0 ? std::vector<Tensor*>{out, &ws} : std::vector<Tensor*>{out};
    };

    Tensor dx = garbage_f32(cp.x_dims()), dw = garbage_f32(cp.w_dims()), db = garbage_f32({cp.k});
    expect_ok(run_op(OpCode::kConvGradInput, {&dy, &w}, with_ws(&dx), attrs), cp.name);
    expect_ok(run_op(OpCode::kConvGradWeight, {&dy, &x}, {&dw}, attrs), cp.name);
    expect_ok(run_op(OpCode::kChannelSum, {&dy}, {&db}), cp.name);

    expect_grad(dx.f, fd_of([&](const Vec& v) { return ref_conv(cp, v, wv, bv); }, xv, g),
                Label("dx", cp.name).text);
    expect_grad(dw.f, fd_of([&](const Vec& v) { return ref_conv(cp, xv, v, bv); }, wv, g),
                Label("dw", cp.name).text);
    expect_grad(db.f, fd_of([&](const Vec& v) { return ref_conv(cp, xv, wv, v); }, bv, g),
                Label("db", cp.name).text);
  }
}

// Products longer than a GEMM block (256) in every gradient: dw sums 289 positions per image,
// the stride-1 dx (a convolution of dy with flipped filters) 40 x 9 = 360 taps, the strided dx
// (col2im) 40 per tap; with groups and padding wider than the filter's reach.
void conv_backward_with_long_reductions_matches_float64_adjoint(void**) {
  // name, rank3, n, c, h, w, k, r, s, stride h w, pad h w, dilation h w, groups.
  const ConvProblem problems[] = {
      {"32 to 40 channels on 17x17", false, 2, 32, 17, 17, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"32 to 40 channels stride 2", false, 1, 32, 17, 17, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1},
      {"64 to 96 channels in 2 groups, padding 3", false, 1, 64, 9, 10, 96, 3, 3, 1, 1, 3, 3, 1, 1,
       2},
      // The flipped convolution of dx reads 400 channels of dy in chunks of its scratch, or
      // 700 of 32 padded columns, which do not fit (the column matrix is packed instead).
      {"8 to 400 channels on 20x20", false, 1, 8, 20, 20, 400, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"8 to 700 channels on 30x30", false, 1, 8, 30, 30, 700, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // dw's dot products over the padded images take 400 and 700 channels of dy in chunks of
      // 224 and 128 positions; 2000 padded input channels do not fit beside even one chunk,
      // and dw takes the packed column matrix instead.
      {"2000 to 2 channels on 30x30", false, 1, 2000, 30, 30, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // dx's flipped convolution reads whole padded 8x8 images of dy's 256 channels a group two
      // at a time, its products 2304 taps (9 K blocks) long; dw sums whole padded images of 256
      // input channels a group three at a time.
      {"8 to 512 channels in 2 groups on 8x8", false, 5, 8, 8, 8, 512, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"512 to 8 channels in 2 groups on 8x8", false, 5, 512, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      // dx and dw by Winograd's F(2x2, 3x3) (32 channels or more each way): its flipped padding
      // 2, -1 (cropped) for padding 3 and -2 for padding 4; 128 x 96 channels take Winograd's dx
      // but the direct dw (two parts of its sums would not fit).
      {"36 to 32 channels, padding 0 on 9x7", false, 2, 36, 9, 7, 32, 3, 3, 1, 1, 0, 0, 1, 1, 1},
      {"32 to 40 channels, padding 3 on 5x6", false, 2, 32, 5, 6, 40, 3, 3, 1, 1, 3, 3, 1, 1, 1},
      {"32 to 32 channels, padding 4 on 5x5", false, 2, 32, 5, 5, 32, 3, 3, 1, 1, 4, 4, 1, 1, 1},
      {"128 to 96 channels on 6x6", false, 2, 128, 6, 6, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1},
  };
  uint64_t seed = 650;
  for (const ConvProblem& cp : problems) {
    Rng rng(++seed);
    Tensor x = random_f32(cp.x_dims(), rng, -1, 1), w = random_f32(cp.w_dims(), rng, -1, 1);
    Tensor dy = random_f32(cp.y_dims(), rng, -1, 1);
    const int64_t ws_elems = cp.grad_input_workspace();
    Tensor ws = garbage_f32({ws_elems > 0 ? ws_elems : 1});
    auto with_ws = [&](Tensor* out) {
      return ws_elems > 0 ? std::vector<Tensor*>{out, &ws} : std::vector<Tensor*>{out};
    };
    Tensor dx = garbage_f32(cp.x_dims()), dw = garbage_f32(cp.w_dims());
    const Attrs attrs{cp.iattrs(), {}};
    expect_ok(run_op(OpCode::kConvGradInput, {&dy, &w}, with_ws(&dx), attrs), cp.name);
    expect_ok(run_op(OpCode::kConvGradWeight, {&dy, &x}, {&dw}, attrs), cp.name);
    Vec want_dx, want_dw;
    ref_conv_adjoint(cp, to_double(x.f), to_double(w.f), to_double(dy.f), &want_dx, &want_dw);
    expect_grad(dx.f, want_dx, Label("dx", cp.name).text);
    expect_grad(dw.f, want_dw, Label("dw", cp.name).text);
  }
}

// channel_sum also serves rank 2 and rank 5 gradients ([N, C, ...]).
void channel_sum_of_any_rank_matches_finite_differences(void**) {
  Rng rng(620);
  for (const Dims& d : {Dims{6, 4}, Dims{2, 3, 2, 2, 3}}) {
    int64_t inner = 1;
    for (size_t k = 2; k < d.size(); ++k) inner *= d[k];
    Tensor dy = random_f32(d, rng, -1, 1), b = random_f32({d[1]}, rng, -1, 1),
           db = garbage_f32({d[1]});
    expect_ok(run_op(OpCode::kChannelSum, {&dy}, {&db}), "channel_sum");
    // y = broadcast of b over [N, C, ...].
    const Vec fd = fd_of(
        [&](const Vec& v) {
          Vec y(static_cast<size_t>(dy.numel()));
          for (size_t k = 0; k < y.size(); ++k)
            y[k] = v[(k / static_cast<size_t>(inner)) % v.size()];
          return y;
        },
        to_double(b.f), to_double(dy.f));
    expect_grad(db.f, fd, "db");
  }
}

// ---- pooling ------------------------------------------------------------------------------------

// Distinct values 1e-2 apart in a random order: no window has a tie.
Tensor distinct_f32(const Dims& dims, Rng& rng) {
  Tensor t = f32(dims);
  for (size_t k = 0; k < t.f.size(); ++k)
    t.f[k] = static_cast<float>(0.01 * static_cast<double>(k)) - 1.0f;
  for (size_t k = t.f.size(); k > 1; --k) std::swap(t.f[k - 1], t.f[rng.next() % k]);
  return t;
}

void max_pool_backward_matches_finite_differences_with_padding_and_both_ceil_modes(void**) {
  uint64_t seed = 700;
  for (PoolProblem pp : max_pool_problems()) {
    for (bool ceil_mode : {false, true}) {
      pp.ceil_mode = ceil_mode;
      Rng rng(++seed);
      Tensor x = distinct_f32(pp.x_dims(), rng), dy = random_f32(pp.y_dims(), rng, -1, 1);
      Tensor dx = garbage_f32(pp.x_dims());
      expect_ok(run_op(OpCode::kMaxPoolGrad, {&dy, &x}, {&dx}, Attrs{pp.iattrs(false), {}}),
                pp.name);
      const Vec fd =
          fd_of([&](const Vec& v) { return ref_max_pool(pp, v); }, to_double(x.f), to_double(dy.f));
      expect_grad(dx.f, fd, Label(ceil_mode ? "dx, ceil" : "dx, floor", pp.name).text);
    }
  }
}

void avg_pool_backward_matches_finite_differences_for_both_ceil_modes_and_pad_counts(void**) {
  uint64_t seed = 720;
  for (PoolProblem pp : pool_problems()) {
    for (int combo = 0; combo < 4; ++combo) {
      pp.ceil_mode = (combo & 1) != 0;
      pp.count_include_pad = (combo & 2) != 0;
      Rng rng(++seed);
      Tensor x = random_f32(pp.x_dims(), rng, -1, 1), dy = random_f32(pp.y_dims(), rng, -1, 1);
      Tensor dx = garbage_f32(pp.x_dims());
      expect_ok(run_op(OpCode::kAvgPoolGrad, {&dy}, {&dx}, Attrs{pp.iattrs(true), {}}), pp.name);
      const Vec fd =
          fd_of([&](const Vec& v) { return ref_avg_pool(pp, v); }, to_double(x.f), to_double(dy.f));
      static const char* const kModes[] = {"dx, floor, pad excluded", "dx, ceil, pad excluded",
                                           "dx, floor, pad counted", "dx, ceil, pad counted"};
      expect_grad(dx.f, fd, Label(kModes[combo], pp.name).text);
    }
  }
}

void global_avg_pool_backward_matches_finite_differences_on_rank_3_and_4(void**) {
  Rng rng(740);
  for (const Dims& d : {Dims{2, 3, 4, 5}, Dims{3, 2, 7}}) {
    const int64_t spatial = d.size() == 4 ? d[2] * d[3] : d[2];
    Tensor x = random_f32(d, rng, -1, 1), dy = random_f32({d[0], d[1]}, rng, -1, 1);
    Tensor dx = garbage_f32(d);
    expect_ok(run_op(OpCode::kGlobalAvgPoolGrad, {&dy}, {&dx}), "global_avg_pool_grad");
    const Vec fd = fd_of([&](const Vec& v) { return ref_global_avg_pool(v, d[0], d[1], spatial); },
                         to_double(x.f), to_double(dy.f));
    expect_grad(dx.f, fd, "dx");
  }
}

// ---- batch norm ---------------------------------------------------------------------------------

void batch_norm_backward_matches_finite_differences_on_rank_2_3_and_4(void**) {
  Rng rng(750);
  const double eps = 1e-5;
  for (const Dims& d : {Dims{6, 3}, Dims{3, 2, 5}, Dims{2, 3, 3, 4}}) {
    const int64_t n = d[0], c = d[1],
                  spatial = d.size() == 2   ? 1
                            : d.size() == 3 ? d[2]
                                            : d[2] * d[3];
    Tensor x = random_f32(d, rng, -2, 2), dy = random_f32(d, rng, -1, 1);
    Tensor gamma = random_f32({c}, rng, 0.5, 1.5), beta = random_f32({c}, rng, -0.5, 0.5);
    const Vec xv = to_double(x.f), gv = to_double(gamma.f), bv = to_double(beta.f),
              g = to_double(dy.f);
    Vec y, mean, var;
    ref_batch_norm(xv, gv, bv, n, c, spatial, eps, &y, &mean, &var);
    Tensor tm = f32({c}, to_float(mean)), tv = f32({c}, to_float(var));
    Tensor dx = garbage_f32(d), dgamma = garbage_f32({c}), dbeta = garbage_f32({c});
    expect_ok(run_op(OpCode::kBatchNormGrad, {&dy, &x, &tm, &tv, &gamma}, {&dx, &dgamma, &dbeta},
                     Attrs{{}, {static_cast<float>(eps)}}),
              "batch_norm_grad");
    // The batch statistics depend on x: the differences see them move, as autograd does.
    auto bn = [&](const Vec& xs, const Vec& gs, const Vec& bs) {
      Vec out, m, v;
      ref_batch_norm(xs, gs, bs, n, c, spatial, eps, &out, &m, &v);
      return out;
    };
    expect_grad(dx.f, fd_of([&](const Vec& v) { return bn(v, gv, bv); }, xv, g), "dx");
    expect_grad(dgamma.f, fd_of([&](const Vec& v) { return bn(xv, v, bv); }, gv, g), "dgamma");
    expect_grad(dbeta.f, fd_of([&](const Vec& v) { return bn(xv, gv, v); }, bv, g), "dbeta");
  }
}

// ---- pad and concat -----------------------------------------------------------------------------

void pad_backward_matches_finite_differences_on_rank_4_and_rank_3(void**) {
  Rng rng(760);
  struct PadCase {
    Dims x;
    int64_t top, bottom, left, right;
  };
  const PadCase cases[] = {
      {{2, 3, 4, 5}, 1, 2, 3, 0}, {{2, 2, 3, 3}, 0, 1, 0, 2}, {{2, 3, 6}, 0, 0, 2, 1}};
  for (const PadCase& pc : cases) {
    const bool rank3 = pc.x.size() == 3;
    const int64_t h = rank3 ? 1 : pc.x[2], w = pc.x.back();
    Dims y_dims = pc.x;
    y_dims.back() += pc.left + pc.right;
    if (!rank3) y_dims[2] += pc.top + pc.bottom;
    Tensor x = random_f32(pc.x, rng, -1, 1), dy = random_f32(y_dims, rng, -1, 1),
           dx = garbage_f32(pc.x);
    expect_ok(
        run_op(OpCode::kPadGrad, {&dy}, {&dx}, Attrs{{pc.top, pc.bottom, pc.left, pc.right}, {}}),
        "pad_grad");
    const Vec fd = fd_of(
        [&](const Vec& v) {
          return ref_pad(v, pc.x[0], pc.x[1], h, w, pc.top, pc.bottom, pc.left, pc.right, 0.5);
        },
        to_double(x.f), to_double(dy.f));
    expect_grad(dx.f, fd, "dx");
  }
}

// concat's gradient is one slice of dy per input, at the input's offset along the axis.
void check_concat_backward(const std::vector<Dims>& dims, int64_t axis, uint64_t seed) {
  Rng rng(seed);
  std::vector<Vec> parts;
  Dims y_dims = dims[0];
  y_dims[static_cast<size_t>(axis)] = 0;
  for (const Dims& d : dims) {
    parts.push_back(to_double(random_f32(d, rng, -1, 1).f));
    y_dims[static_cast<size_t>(axis)] += d[static_cast<size_t>(axis)];
  }
  Tensor dy = random_f32(y_dims, rng, -1, 1);
  int64_t offset = 0;
  for (size_t t = 0; t < dims.size(); ++t) {
    Tensor dpart = garbage_f32(dims[t]);
    expect_ok(run_op(OpCode::kSlice, {&dy}, {&dpart}, Attrs{{axis, offset}, {}}), "slice");
    const Vec fd = fd_of(
        [&](const Vec& v) {
          std::vector<Vec> moved = parts;
          moved[t] = v;
          return ref_concat(moved, dims, axis);
        },
        parts[t], to_double(dy.f));
    char what[64];
    snprintf(what, sizeof(what), "d input %zu, axis %lld", t, static_cast<long long>(axis));
    expect_grad(dpart.f, fd, what);
    offset += dims[t][static_cast<size_t>(axis)];
  }
}

void concat_backward_by_slices_matches_finite_differences(void**) {
  check_concat_backward({{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1, 770);
  check_concat_backward({{2, 3, 2, 2}, {1, 3, 2, 2}}, 0, 771);
  check_concat_backward({{2, 2, 3}, {2, 2, 1}, {2, 2, 2}}, 2, 772);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(conv_backward_matches_finite_differences_for_every_attribute_combination),
      cmocka_unit_test(conv_backward_with_long_reductions_matches_float64_adjoint),
      cmocka_unit_test(channel_sum_of_any_rank_matches_finite_differences),
      cmocka_unit_test(
          max_pool_backward_matches_finite_differences_with_padding_and_both_ceil_modes),
      cmocka_unit_test(
          avg_pool_backward_matches_finite_differences_for_both_ceil_modes_and_pad_counts),
      cmocka_unit_test(global_avg_pool_backward_matches_finite_differences_on_rank_3_and_4),
      cmocka_unit_test(batch_norm_backward_matches_finite_differences_on_rank_2_3_and_4),
      cmocka_unit_test(pad_backward_matches_finite_differences_on_rank_4_and_rank_3),
      cmocka_unit_test(concat_backward_by_slices_matches_finite_differences),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
