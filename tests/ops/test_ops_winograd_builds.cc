// Winograd's F(2x2, 3x3) (backends/cpu/conv/winograd.h) in every instruction-set build this CPU
// runs, called directly: the convolution, the input gradient's flipped one and the weight
// gradient against the float64 definitions of op_reference_spatial.h, over odd output sizes
// (tiles cut by the edge), padding 0, 1, 2 and a cropping -1, output channels that are not a
// multiple of 4 and blocks cut short; the tiles in uneven pieces, as the threads cut them, to
// the bits of one call, and the weight gradient's sums in parts. The kernels' conv tests cover
// the choice of the path and the threads.
//
// Tolerance: |got - want| <= 2e-6 * T + 1e-5 * |want| for T terms of values in [-1, 1] (9 C for
// y and dx, N P Q for dw), as the direct convolution's tests: Winograd's transforms add a few
// roundings per term.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "backends/cpu/conv/winograd.h"
#include "backends/cpu/gemm/gemm.h"
#include "op_harness.h"
#include "op_reference_spatial.h"

namespace {

using namespace ops_test;
using remat::cpu::WinogradConv;
using Tiles = void (*)(const WinogradConv&, const float*, const float*, int64_t, int64_t, float*,
                       float*);
using WeightSums = void (*)(const WinogradConv&, const float*, const float*, int64_t, int64_t,
                            float*, float*);

struct NamedTiles {
  const char* name;
  Tiles run;
  WeightSums weight_sums;
};

// The builds of the tiles this CPU can run.
std::vector<NamedTiles> builds() {
  std::vector<NamedTiles> out = {
      {"baseline", remat::cpu::winograd_tiles_baseline, remat::cpu::winograd_weight_sums_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({"avx2", remat::cpu::winograd_tiles_avx2, remat::cpu::winograd_weight_sums_avx2});
  }
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back(
        {"avx512", remat::cpu::winograd_tiles_avx512, remat::cpu::winograd_weight_sums_avx512});
  }
#endif
  return out;
}

// A thread's scratch as the backend gives it: 64-byte aligned, garbage to begin with, and
// followed by guard floats that a call must leave as they were.
struct Scratch {
  static constexpr int64_t kGuard = 256;
  static constexpr float kGarbage = 12345.0f;
  std::vector<float> data;
  float* at;
  int64_t floats;
  explicit Scratch(int64_t size)
      : data(static_cast<size_t>(size + kGuard) + 16, kGarbage), floats(size) {
    at = data.data() + (16 - (reinterpret_cast<uintptr_t>(data.data()) / sizeof(float)) % 16) % 16;
  }
  void expect_guard_intact(const char* what) const {
    for (int64_t i = 0; i < kGuard; ++i) {
      if (!(at[floats + i] == kGarbage)) {
        fail_msg("%s: wrote %lld floats past its scratch", what, static_cast<long long>(i + 1));
      }
    }
  }
};

// The tiles of |wc| on |x| with filters |w| (|flipped| as winograd_filters takes them), in the
// pieces that |cuts| (tile indices, ascending) make, each with its own scratch; y starts NaN.
std::vector<float> run_tiles(Tiles run, WinogradConv wc, const std::vector<float>& x,
                             const std::vector<float>& w, bool flipped,
                             const std::vector<int64_t>& cuts) {
  const int64_t thread_floats = remat::cpu::winograd_layout(&wc);
  assert_true(thread_floats <= remat::cpu::kGemmPackFloats);
  std::vector<float> u(static_cast<size_t>(wc.c * wc.kpad * remat::cpu::kWinogradPositions), 0.0f);
  assert_true(static_cast<int64_t>(u.size()) <= remat::cpu::kWinogradFilterFloats);
  // Two calls, as two threads would make them.
  remat::cpu::winograd_filters(w.data(), wc.k, wc.c, wc.kpad, flipped, 0, wc.k / 2, u.data());
  remat::cpu::winograd_filters(w.data(), wc.k, wc.c, wc.kpad, flipped, wc.k / 2, wc.k, u.data());
  std::vector<float> y(static_cast<size_t>(wc.n * wc.k * wc.p * wc.q), NAN);
  const int64_t tiles = remat::cpu::winograd_tile_count(wc);
  int64_t from = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const int64_t to = i < cuts.size() ? cuts[i] : tiles;
    Scratch scratch(thread_floats);
    run(wc, x.data(), u.data(), from, to, scratch.at, y.data());
    scratch.expect_guard_intact("winograd_tiles");
    from = to;
  }
  return y;
}

// One convolution: n images of c channels, h x w, into k channels, 3x3, padding (ph, pw).
struct Problem {
  const char* name;
  int64_t n, c, h, w, k, pad_h, pad_w;
};

// Input channels 32, 23, 16, 21 and 19 leave the AVX-512 weight gradient's 6-wide micro-tiles
// every remainder from 1 to 5.
const Problem kProblems[] = {
    {"7x9 output, 33 channels out (kpad 36), 3 short blocks", 3, 32, 7, 9, 33, 1, 1},
    {"padding 0 on 10x6", 2, 23, 10, 6, 17, 0, 0},
    {"padding 2 and 0 on 5x40 (blocks span tile rows)", 2, 16, 5, 40, 20, 2, 0},
    {"a single output on 3x3", 4, 21, 3, 3, 5, 0, 0},
    {"4x5 in 3 images, 8 channels out", 3, 19, 4, 5, 8, 1, 1},
};

// The direct convolution's problem of the same shape, for the float64 reference.
ConvProblem conv_problem(const Problem& pr) {
  return ConvProblem{pr.name, false, pr.n, pr.c,     pr.h,     pr.w, pr.k, 3,
                     3,       1,     1,    pr.pad_h, pr.pad_w, 1,    1,    1};
}

// A problem's operands x, w and dy, drawn in [-1, 1] in that order from |seed|, and its shapes
// as Winograd's convolution and as its input gradient's: dy [n, k, P, Q] convolved with w
// turned 180 degrees and its channel axes swapped, padded by 2 - pad.
struct Operands {
  ConvProblem cp;
  Tensor x, w, dy;
  WinogradConv forward, flipped;
};

Operands draw(const Problem& pr, uint64_t seed) {
  const ConvProblem cp = conv_problem(pr);
  Rng rng(seed);
  Tensor x = random_f32(cp.x_dims(), rng, -1, 1);
  Tensor w = random_f32(cp.w_dims(), rng, -1, 1);
  Tensor dy = random_f32(cp.y_dims(), rng, -1, 1);
  const WinogradConv forward{pr.n,     pr.c,     pr.h, pr.w, pr.k, cp.p(), cp.q(),
                             pr.pad_h, pr.pad_w, 0,    0,    0,    0};
  const WinogradConv flipped{pr.n,         pr.k,         cp.p(), cp.q(), pr.c, pr.h, pr.w,
                             2 - pr.pad_h, 2 - pr.pad_w, 0,      0,      0,    0};
  return {cp, x, w, dy, forward, flipped};
}

void expect_near_reference(const std::vector<float>& got, const Vec& want, int64_t terms,
                           const char* build, const char* what) {
  char label[160];
  snprintf(label, sizeof(label), "%s (%s)", what, build);
  expect_close(got, want, 2e-6 * static_cast<double>(terms), 1e-5, label);
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const char* build,
                      const char* what) {
  assert_int_equal(a.size(), b.size());
  if (memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
    fail_msg("%s, %s: the tiles in pieces wrote other bits than in one call", build, what);
  }
}

void tiles_match_the_convolution_in_every_build_and_in_pieces(void**) {
  uint64_t seed = 900;
  for (const Problem& pr : kProblems) {
    const Operands o = draw(pr, ++seed);
    const Vec want = ref_conv(o.cp, to_double(o.x.f), to_double(o.w.f), Vec());
    const int64_t tiles = remat::cpu::winograd_tile_count(o.forward);
    for (const NamedTiles& b : builds()) {
      const std::vector<float> whole = run_tiles(b.run, o.forward, o.x.f, o.w.f, false, {});
      expect_near_reference(whole, want, 9 * pr.c, b.name, pr.name);
      const std::vector<float> pieces =
          run_tiles(b.run, o.forward, o.x.f, o.w.f, false, {1, tiles / 2, tiles / 2 + 1});
      expect_same_bits(whole, pieces, b.name, pr.name);
    }
  }
}

// The input gradient at unit stride (Operands::flipped; padding 3 crops: -1).
void flipped_tiles_match_the_input_gradient_in_every_build(void**) {
  const Problem problems[] = {
      {"input gradient, padding 1 on 9x7", 2, 20, 9, 7, 33, 1, 1},
      {"input gradient, padding 0 and 2 on 6x11", 3, 16, 6, 11, 18, 0, 2},
      {"input gradient, padding 3 (cropped) on 5x5", 2, 17, 5, 5, 19, 3, 3},
  };
  uint64_t seed = 950;
  for (const Problem& pr : problems) {
    const Operands o = draw(pr, ++seed);
    Vec want_dx, want_dw;
    ref_conv_adjoint(o.cp, to_double(o.x.f), to_double(o.w.f), to_double(o.dy.f), &want_dx,
                     &want_dw);
    const int64_t tiles = remat::cpu::winograd_tile_count(o.flipped);
    for (const NamedTiles& b : builds()) {
      const std::vector<float> whole = run_tiles(b.run, o.flipped, o.dy.f, o.w.f, true, {});
      expect_near_reference(whole, want_dx, 9 * pr.k, b.name, pr.name);
      const std::vector<float> pieces =
          run_tiles(b.run, o.flipped, o.dy.f, o.w.f, true, {tiles / 3, tiles - 1});
      expect_same_bits(whole, pieces, b.name, pr.name);
    }
  }
}

// dw of the same problems: the transformed sums over the tiles in 1, 2, 3 and 5 parts, cut as
// the kernel cuts its parts (an empty part sums to zero), against the float64 adjoint, whose
// sums run over N * P * Q positions; and each part computed on its own, with garbage beforehand
// in its scratch and sums, to the bits of the same parts computed one after another in one
// scratch.
std::vector<float> weight_gradient(WeightSums sums, WinogradConv wc, const std::vector<float>& x,
                                   const std::vector<float>& dy, int64_t parts,
                                   bool fresh_scratch) {
  const int64_t thread_floats = remat::cpu::winograd_layout(&wc);
  const int64_t part_floats = wc.kpad * wc.c * remat::cpu::kWinogradPositions;
  const int64_t tiles = remat::cpu::winograd_tile_count(wc);
  std::vector<float> du(static_cast<size_t>(parts * part_floats), NAN);
  Scratch shared(thread_floats);
  for (int64_t p = 0; p < parts; ++p) {
    Scratch own(thread_floats);
    sums(wc, x.data(), dy.data(), p * tiles / parts, (p + 1) * tiles / parts,
         fresh_scratch ? own.at : shared.at, du.data() + p * part_floats);
    (fresh_scratch ? own : shared).expect_guard_intact("winograd_weight_sums");
  }
  std::vector<float> dw(static_cast<size_t>(wc.k * wc.c * 9), NAN);
  remat::cpu::winograd_filter_gradient(du.data(), parts, part_floats, wc.c, 0, wc.k, dw.data());
  return dw;
}

void weight_sums_match_the_weight_gradient_in_every_build_and_in_parts(void**) {
  uint64_t seed = 980;
  for (const Problem& pr : kProblems) {
    const Operands o = draw(pr, ++seed);
    Vec want_dx, want_dw;
    ref_conv_adjoint(o.cp, to_double(o.x.f), to_double(o.w.f), to_double(o.dy.f), &want_dx,
                     &want_dw);
    for (const NamedTiles& b : builds()) {
      for (int64_t parts :
           {1, 2, 3, 5}) {  // 5 parts of the 4 tiles of "a single output": one empty
        const std::vector<float> dw =
            weight_gradient(b.weight_sums, o.forward, o.x.f, o.dy.f, parts, false);
        expect_near_reference(dw, want_dw, pr.n * o.cp.p() * o.cp.q(), b.name, pr.name);
        const std::vector<float> fresh =
            weight_gradient(b.weight_sums, o.forward, o.x.f, o.dy.f, parts, true);
        expect_same_bits(dw, fresh, b.name, pr.name);
      }
    }
  }
}

// The conv kernels take Winograd's path exactly where winograd_conv's rule says: their bytes
// equal this CPU's build of the tiles (and of the weight sums, in winograd_weight_parts'
// parts) where it applies, and differ where it does not: 16 channels in, and a weight gradient
// whose two parts of sums would not fit (128 x 96 channels: forward and input gradient only).
void kernels_take_winograd_where_the_rule_says(void**) {
  struct Case {
    Problem pr;
    bool forward, weight_gradient;
  };
  const Case cases[] = {
      {{"32 to 33 channels on 7x9", 3, 32, 7, 9, 33, 1, 1}, true, true},
      {{"128 to 96 channels on 6x6", 2, 128, 6, 6, 96, 1, 1}, true, false},
      {{"16 to 16 channels on 8x8", 2, 16, 8, 8, 16, 1, 1}, false, false},
  };
  uint64_t seed = 990;
  for (const Case& k : cases) {
    const Problem& pr = k.pr;
    Operands o = draw(pr, ++seed);
    Tensor y = f32(o.cp.y_dims()), dx = f32(o.cp.x_dims()), dw = f32(o.cp.w_dims());
    const Attrs attrs{o.cp.iattrs(), {}};
    assert_int_equal(run_op(remat::OpCode::kConv, {&o.x, &o.w}, {&y}, attrs).status, REMAT_OK);
    assert_int_equal(run_op(remat::OpCode::kConvGradInput, {&o.dy, &o.w}, {&dx}, attrs).status,
                     REMAT_OK);
    assert_int_equal(run_op(remat::OpCode::kConvGradWeight, {&o.dy, &o.x}, {&dw}, attrs).status,
                     REMAT_OK);
    WinogradConv laid = o.forward;
    remat::cpu::winograd_layout(&laid);
    const bool same_y =
        y.f == run_tiles(remat::cpu::winograd_tiles, o.forward, o.x.f, o.w.f, false, {});
    const bool same_dx =
        dx.f == run_tiles(remat::cpu::winograd_tiles, o.flipped, o.dy.f, o.w.f, true, {});
    const int64_t parts = remat::cpu::winograd_weight_parts(laid);
    const bool same_dw = dw.f == weight_gradient(remat::cpu::winograd_weight_sums, o.forward, o.x.f,
                                                 o.dy.f, parts > 0 ? parts : 1, true);
    if (same_y != k.forward || same_dx != k.forward || same_dw != k.weight_gradient) {
      fail_msg("%s: Winograd's bits for y %d, dx %d, dw %d; want %d, %d, %d", pr.name, same_y,
               same_dx, same_dw, k.forward, k.forward, k.weight_gradient);
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tiles_match_the_convolution_in_every_build_and_in_pieces),
      cmocka_unit_test(flipped_tiles_match_the_input_gradient_in_every_build),
      cmocka_unit_test(weight_sums_match_the_weight_gradient_in_every_build_and_in_parts),
      cmocka_unit_test(kernels_take_winograd_where_the_rule_says),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
