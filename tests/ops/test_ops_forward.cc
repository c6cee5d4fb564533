// Forward kernels against the float64 references of op_reference.h, plus dropout statistics,
// optimizer trajectories, determinism and the failure paths of data-dependent errors.
//
// Tolerances: elementwise and row ops |got - want| <= 1e-5 + 1e-5 * |want| (float32 rounding
// of O(1) values, transcendental functions within a few ulp); matmul 1e-4 * K absolute (K
// products of values in [-1, 1] rounded in float32); optimizers 1e-5 relative (three steps).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/cmocka_cpp.h"
#include <math.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/ops/work_splits.h"
#include "op_harness.h"
#include "op_reference.h"

using namespace ops_test;
using remat::OpCode;

namespace {

constexpr double kTol = 1e-5;

// Runs a one-input, one-output f32 op and compares it with |f| applied elementwise.
void check_unary(OpCode code, double (*f)(double), const Attrs& attrs = Attrs()) {
  Rng rng(static_cast<uint64_t>(code));
  Tensor x = random_f32({5, 37}, rng, -4, 4), y = f32({5, 37});
  assert_int_equal(run_op(code, {&x}, {&y}, attrs).status, REMAT_OK);
  Vec want = to_double(x.f);
  for (double& v : want) v = f(v);
  expect_close(y.f, want, kTol, kTol, remat::op_name(static_cast<uint16_t>(code)));
}

void check_matmul_mode(MatMulMode mode, int64_t batch, int64_t m, int64_t k, int64_t n) {
  Rng rng(100 + static_cast<uint64_t>(mode));
  for (int combo = 0; combo < 4; ++combo) {
    const MatMulCase mc{mode, (combo & 1) != 0, (combo & 2) != 0, batch, m, k, n};
    Tensor a = random_f32(mc.a_dims(), rng, -1, 1), b = random_f32(mc.b_dims(), rng, -1, 1);
    Tensor c =
        f32(mc.c_dims(), std::vector<float>(static_cast<size_t>(f32(mc.c_dims()).numel()), NAN));
    const float alpha = combo == 3 ? -0.5f : 1.0f;
    run_op(OpCode::kMatMul, {&a, &b}, {&c}, Attrs{{mc.trans_a, mc.trans_b}, {alpha}});
    const double reduce_k = mode == MatMulMode::kReduce ? static_cast<double>(batch * k) : k;
    expect_close(c.f, ref_matmul(mc, alpha, to_double(a.f), to_double(b.f)), 1e-4 * reduce_k, 0.0,
                 combo == 0   ? "C (nn)"
                 : combo == 1 ? "C (tn)"
                 : combo == 2 ? "C (nt)"
                              : "C (tt)");
  }
}

// Sizes straddle the portable GEMM's blocks (K over 256, N over 256, M over one A block).
void matmul_batched_mode_matches_reference(void**) {
  check_matmul_mode(MatMulMode::kBatched, 2, 77, 300, 270);
}

void matmul_broadcast_mode_matches_reference(void**) {
  check_matmul_mode(MatMulMode::kBroadcast, 3, 50, 260, 33);
}

void matmul_reduce_mode_matches_reference(void**) {
  check_matmul_mode(MatMulMode::kReduce, 4, 31, 90, 45);
}

// A product too small to cut along one side alone (a 256 x 256 weight gradient's shape): the
// kernel cuts C into 2 x 2 tiles (backends/cpu/ops/matmul.cc), each summing the batch.
void matmul_reduce_mode_in_tiles_matches_reference(void**) {
  check_matmul_mode(MatMulMode::kReduce, 2, 260, 20, 270);
}

// The matmul op's cut of C among threads (backends/cpu/ops/work_splits.h): M one short of two
// row blocks (uncut), at it and one past (cut by rows); N likewise by columns; and products
// small in M and N but long in K, whose tiles are halved down to the minimum block (one short,
// at and one past twice it). run_op compares 1, 2 and 3 threads bit for bit.
void matmul_matches_reference_around_its_cuts(void**) {
  using remat::cpu::kMatmulColumnBlock;
  using remat::cpu::kMatmulMinBlock;
  using remat::cpu::kMatmulRowBlock;
  for (const int64_t m : {2 * kMatmulRowBlock - 1, 2 * kMatmulRowBlock, 2 * kMatmulRowBlock + 1})
    check_matmul_mode(MatMulMode::kBroadcast, 1, m, 8, 12);
  for (const int64_t n :
       {2 * kMatmulColumnBlock - 1, 2 * kMatmulColumnBlock, 2 * kMatmulColumnBlock + 1})
    check_matmul_mode(MatMulMode::kBroadcast, 1, 12, 8, n);
  for (const int64_t side : {2 * kMatmulMinBlock - 1, 2 * kMatmulMinBlock, 2 * kMatmulMinBlock + 1})
    check_matmul_mode(MatMulMode::kReduce, 2, side, 40, side);
}

void matmul_of_plain_matrices_matches_reference(void**) {
  Rng rng(104);
  Tensor a = random_f32({7, 9}, rng, -1, 1), b = random_f32({9, 5}, rng, -1, 1), c = f32({7, 5});
  run_op(OpCode::kMatMul, {&a, &b}, {&c}, Attrs{{0, 0}, {2.0f}});
  const MatMulCase mc{MatMulMode::kBroadcast, false, false, 1, 7, 9, 5};
  expect_close(c.f, ref_matmul(mc, 2.0, to_double(a.f), to_double(b.f)), 1e-4 * 9, 0.0, "C");
}

// Every transpose combination and every interleaved layout of A, B and C, against float64
// products indexed element by element; C starts as NaN, so an element left unwritten fails.
void head_matmul_matches_reference_in_every_layout(void**) {
  Rng rng(111);
  for (int combo = 0; combo < 4; ++combo) {
    for (int64_t layout = 0; layout <= 7; ++layout) {
      const HeadMatMulCase hc{2, 3, 5, 7, 4, (combo & 1) != 0, (combo & 2) != 0, layout};
      Tensor a = random_f32(hc.a().dims(), rng, -1, 1), b = random_f32(hc.b().dims(), rng, -1, 1);
      Tensor c = f32(hc.c().dims(), std::vector<float>(static_cast<size_t>(2 * 3 * 5 * 4), NAN));
      const float alpha = combo == 3 ? -0.5f : 1.25f;
      const Attrs attrs{{hc.trans_a, hc.trans_b, hc.heads, layout}, {alpha}};
      assert_int_equal(run_op(OpCode::kHeadMatMul, {&a, &b}, {&c}, attrs).status, REMAT_OK);
      char what[64];
      snprintf(what, sizeof(what), "C (trans %d%d, interleaved %lld)", hc.trans_a, hc.trans_b,
               static_cast<long long>(layout));
      expect_close(c.f, ref_head_matmul(hc, alpha, to_double(a.f), to_double(b.f)), 1e-4 * hc.k,
                   0.0, what);
    }
  }
}

// The transformer's scores over interleaved q and k give the bytes of matmul over their permuted
// copies (the program before head_matmul), at sizes that cut C into tiles.
void head_matmul_gives_the_bytes_of_matmul_on_permuted_heads(void**) {
  // Two products of 300 x 300 give fewer than kMinTiles tiles: each is cut in two.
  const int64_t batch = 1, heads = 2, seq = 300, d = 64;
  const HeadTensor interleaved{batch, heads, seq, d, true}, stacked{batch, heads, seq, d, false};
  Rng rng(112);
  Tensor q = random_f32(interleaved.dims(), rng, -1, 1),
         k = random_f32(interleaved.dims(), rng, -1, 1);
  Tensor q_heads = f32(stacked.dims()), k_heads = f32(stacked.dims());
  for (int64_t o = 0; o < batch; ++o) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < seq; ++i) {
        for (int64_t j = 0; j < d; ++j) {
          q_heads.f[stacked.at(o, h, i, j)] = q.f[interleaved.at(o, h, i, j)];
          k_heads.f[stacked.at(o, h, i, j)] = k.f[interleaved.at(o, h, i, j)];
        }
      }
    }
  }
  Tensor fused = f32({batch, heads, seq, seq}), plain = f32({batch, heads, seq, seq});
  assert_int_equal(
      run_op(OpCode::kHeadMatMul, {&q, &k}, {&fused}, Attrs{{0, 1, heads, 3}, {0.125f}}).status,
      REMAT_OK);
  assert_int_equal(
      run_op(OpCode::kMatMul, {&q_heads, &k_heads}, {&plain}, Attrs{{0, 1}, {0.125f}}).status,
      REMAT_OK);
  assert_memory_equal(fused.f.data(), plain.f.data(), fused.f.size() * sizeof(float));
}

void matmul_run_twice_gives_identical_bytes(void**) {
  Rng rng(105);
  Tensor a = random_f32({2, 130, 300}, rng, -1, 1), b = random_f32({270, 300}, rng, -1, 1);
  Tensor c1 = f32({2, 130, 270}), c2 = f32({2, 130, 270});
  run_op(OpCode::kMatMul, {&a, &b}, {&c1}, Attrs{{0, 1}, {1.0f}});
  run_op(OpCode::kMatMul, {&a, &b}, {&c2}, Attrs{{0, 1}, {1.0f}});
  assert_memory_equal(c1.f.data(), c2.f.data(), c1.f.size() * sizeof(float));
}

// matmul's bias: the product, then the bias added to every row, each element rounded once as
// bias_add rounds it. In both modes that take one, every transpose combination, C cut into
// tiles (batched: K and N over a block; broadcast: 600 stacked rows, three row blocks).
void matmul_with_bias_gives_the_bytes_of_matmul_then_bias_add(void**) {
  const MatMulCase shapes[] = {{MatMulMode::kBatched, false, false, 2, 77, 300, 270},
                               {MatMulMode::kBroadcast, false, false, 3, 200, 40, 300}};
  Rng rng(107);
  for (MatMulCase mc : shapes) {
    for (int combo = 0; combo < 4; ++combo) {
      mc.trans_a = (combo & 1) != 0;
      mc.trans_b = (combo & 2) != 0;
      Tensor a = random_f32(mc.a_dims(), rng, -1, 1), b = random_f32(mc.b_dims(), rng, -1, 1);
      Tensor bias = random_f32({mc.n}, rng, -1, 1);
      const size_t numel = static_cast<size_t>(f32(mc.c_dims()).numel());
      Tensor fused = f32(mc.c_dims(), std::vector<float>(numel, NAN)), product = f32(mc.c_dims());
      Tensor biased = f32(mc.c_dims());
      const Attrs attrs{{mc.trans_a, mc.trans_b}, {combo == 3 ? -0.5f : 1.0f}};
      assert_int_equal(run_op(OpCode::kMatMul, {&a, &b, &bias}, {&fused}, attrs).status, REMAT_OK);
      run_op(OpCode::kMatMul, {&a, &b}, {&product}, attrs);
      run_op(OpCode::kBiasAdd, {&product, &bias}, {&biased});
      assert_memory_equal(fused.f.data(), biased.f.data(), numel * sizeof(float));
      Vec want = ref_matmul(mc, combo == 3 ? -0.5 : 1.0, to_double(a.f), to_double(b.f));
      for (size_t i = 0; i < want.size(); ++i) want[i] += bias.f[i % bias.f.size()];
      expect_close(fused.f, want, 1e-4 * static_cast<double>(mc.k), 0.0, "C + bias");
    }
  }
}

void bias_add_and_reduce_leading_match_reference(void**) {
  Rng rng(106);
  Tensor x = random_f32({3, 4, 300}, rng, -1, 1), b = random_f32({4, 300}, rng, -1, 1);
  Tensor y = f32({3, 4, 300}), db = f32({4, 300});
  run_op(OpCode::kBiasAdd, {&x, &b}, {&y});
  run_op(OpCode::kReduceLeading, {&x}, {&db});
  Vec want_y(x.f.size()), want_db(b.f.size(), 0.0);
  for (size_t i = 0; i < x.f.size(); ++i) {
    want_y[i] = static_cast<double>(x.f[i]) + b.f[i % b.f.size()];
    want_db[i % b.f.size()] += x.f[i];
  }
  expect_close(y.f, want_y, kTol, kTol, "bias_add");
  expect_close(db.f, want_db, kTol, kTol, "reduce_leading");
  // Enough rows and columns for three threads' runs of columns.
  Tensor tall = random_f32({64, 600}, rng, -1, 1), db_tall = f32({600});
  run_op(OpCode::kReduceLeading, {&tall}, {&db_tall});
  Vec want_tall(600, 0.0);
  for (size_t i = 0; i < tall.f.size(); ++i) want_tall[i % 600] += tall.f[i];
  expect_close(db_tall.f, want_tall, kTol, kTol, "reduce_leading (threaded)");
}

void add_mul_and_scale_match_reference(void**) {
  Rng rng(107);
  Tensor a = random_f32({33}, rng, -2, 2), b = random_f32({33}, rng, -2, 2);
  Tensor s = f32({33}), p = f32({33}), z = f32({33});
  run_op(OpCode::kAdd, {&a, &b}, {&s});
  run_op(OpCode::kMul, {&a, &b}, {&p});
  run_op(OpCode::kScale, {&a}, {&z}, Attrs{{}, {0.25f}});
  Vec ws(33), wp(33), wz(33);
  for (size_t i = 0; i < 33; ++i) {
    ws[i] = static_cast<double>(a.f[i]) + b.f[i];
    wp[i] = static_cast<double>(a.f[i]) * b.f[i];
    wz[i] = 0.25 * a.f[i];
  }
  expect_close(s.f, ws, kTol, kTol, "add");
  expect_close(p.f, wp, kTol, kTol, "mul");
  expect_close(z.f, wz, kTol, kTol, "scale");
}

void activations_match_reference(void**) {
  check_unary(OpCode::kRelu, [](double v) { return v > 0 ? v : 0.0; });
  check_unary(OpCode::kGelu, ref_gelu);
  check_unary(OpCode::kTanh, [](double v) { return tanh(v); });
  check_unary(OpCode::kSigmoid, [](double v) { return 1.0 / (1.0 + exp(-v)); });
}

void softmax_matches_reference_and_survives_large_logits(void**) {
  Rng rng(108);
  Tensor x = random_f32({4, 50}, rng, -5, 5), y = f32({4, 50});
  for (size_t i = 0; i < 50; ++i) x.f[i] += 1000.0f;  // exp(1000) overflows unless shifted.
  run_op(OpCode::kSoftmax, {&x}, {&y});
  expect_close(y.f, ref_softmax(to_double(x.f), 50), kTol, 1e-4, "softmax");
}

void layernorm_matches_reference(void**) {
  Rng rng(109);
  Tensor x = random_f32({6, 300}, rng, 3, 5), gamma = random_f32({300}, rng, 0.5, 1.5);
  Tensor beta = random_f32({300}, rng, -1, 1), y = f32({6, 300}), mean = f32({6}), rstd = f32({6});
  run_op(OpCode::kLayerNorm, {&x, &gamma, &beta}, {&y, &mean, &rstd}, Attrs{{}, {1e-5f}});
  Vec wy, wm, wr;
  ref_layernorm(to_double(x.f), to_double(gamma.f), to_double(beta.f), 300, 1e-5, &wy, &wm, &wr);
  expect_close(y.f, wy, 1e-4, 1e-4, "y");
  expect_close(mean.f, wm, kTol, kTol, "mean");
  expect_close(rstd.f, wr, kTol, kTol, "rstd");
}

void dropout_matches_reference(void**) {
  Rng rng(110);
  Tensor x = random_f32({1001}, rng, -1, 1), y = f32({1001});
  run_op(OpCode::kDropout, {&x}, {&y}, Attrs{{3}, {0.25f}, {42, 7}});
  expect_close(y.f, ref_dropout(to_double(x.f), 42, 7, 3, 0.25), kTol, kTol, "dropout");
}

// A NaN or an infinity is never made finite: torch.relu(nan) is nan, threshold_backward (relu's
// gradient: y <= 0 ? 0 : dy) passes dy where y is nan, dropout multiplies by a mask of 0 or
// 1/(1-p) (nan * 0 = nan, -x * 0 = -0), and the smooth activations and softmax propagate.
void nan_and_infinity_propagate_through_activations_and_dropout(void**) {
  Tensor x = f32({8}), y = f32({8});
  const float inf = INFINITY;
  const float in[8] = {NAN, -2.0f, 3.0f, NAN, inf, -inf, NAN, -1.0f};
  memcpy(x.f.data(), in, sizeof(in));
  for (OpCode code :
       {OpCode::kRelu, OpCode::kGelu, OpCode::kTanh, OpCode::kSigmoid, OpCode::kSoftmax}) {
    assert_int_equal(run_op(code, {&x}, {&y}).status, REMAT_OK);
    for (int i : {0, 3, 6}) {
      if (!isnan(y.f[i]))
        fail_msg("%s(nan) at %d gave %g", remat::op_name(static_cast<uint16_t>(code)), i, y.f[i]);
    }
  }
  assert_int_equal(run_op(OpCode::kRelu, {&x}, {&y}).status, REMAT_OK);
  assert_true(y.f[4] == inf && y.f[5] == 0.0f && y.f[1] == 0.0f && y.f[2] == 3.0f);
  Tensor dy = f32({8}), dx = f32({8});
  for (float& v : dy.f) v = 0.5f;
  assert_int_equal(run_op(OpCode::kReluGrad, {&dy, &x}, {&dx}).status, REMAT_OK);
  const float want_dx[8] = {0.5f, 0.0f, 0.5f, 0.5f, 0.5f, 0.0f, 0.5f, 0.0f};
  for (int i = 0; i < 8; ++i) assert_true(dx.f[i] == want_dx[i]);
  for (OpCode code : {OpCode::kDropout, OpCode::kDropoutGrad}) {
    assert_int_equal(run_op(code, {&x}, {&y}, Attrs{{3}, {0.5f}, {42, 7}}).status, REMAT_OK);
    for (int i = 0; i < 8; ++i) {
      if (isnan(in[i]) && !isnan(y.f[i])) fail_msg("dropout(nan) at %d gave %g", i, y.f[i]);
      if (isinf(in[i]) && !ref_dropout_keep(42, 7, 3, static_cast<uint64_t>(i), 0.5) &&
          !isnan(y.f[i])) {
        fail_msg("a dropped infinity at %d gave %g, not inf * 0 = nan", i, y.f[i]);
      }
      if (in[i] < 0 && !isinf(in[i]) &&
          !ref_dropout_keep(42, 7, 3, static_cast<uint64_t>(i), 0.5)) {
        assert_true(y.f[i] == 0.0f && signbit(y.f[i]));
      }
    }
  }
}

void dropout_keeps_about_one_minus_p_of_the_elements(void**) {
  Tensor x = f32({100000}, std::vector<float>(100000, 1.0f)), y = f32({100000});
  run_op(OpCode::kDropout, {&x}, {&y}, Attrs{{9}, {0.3f}, {5, 0}});
  size_t dropped = 0;
  for (float v : y.f) dropped += v == 0.0f;
  assert_true(fabs(static_cast<double>(dropped) / 1e5 - 0.3) < 0.01);
}

void dropout_mask_depends_only_on_seed_step_and_key(void**) {
  Rng rng(111);
  Tensor x = random_f32({4099}, rng, 0.5, 1), y1 = f32({4099}), y2 = f32({4099}), y3 = f32({4099});
  run_op(OpCode::kDropout, {&x}, {&y1}, Attrs{{1}, {0.5f}, {77, 3}});
  run_op(OpCode::kDropout, {&x}, {&y2}, Attrs{{1}, {0.5f}, {77, 3}});
  run_op(OpCode::kDropout, {&x}, {&y3}, Attrs{{1}, {0.5f}, {77, 4}});
  assert_memory_equal(y1.f.data(), y2.f.data(), y1.f.size() * sizeof(float));
  assert_memory_not_equal(y1.f.data(), y3.f.data(), y1.f.size() * sizeof(float));
}

void embedding_matches_reference(void**) {
  Rng rng(112);
  Tensor table = random_f32({6, 5}, rng, -1, 1), ids = i32({2, 2}, {5, 0, 3, 5}),
         y = f32({2, 2, 5});
  assert_int_equal(run_op(OpCode::kEmbedding, {&ids, &table}, {&y}).status, REMAT_OK);
  expect_close(y.f, ref_embedding(ids.i, to_double(table.f), 5), 0.0, 0.0, "embedding");
}

void check_permute(const std::vector<int64_t>& d, const std::vector<int64_t>& p) {
  Rng rng(113);
  std::vector<int64_t> y_dims, attrs{static_cast<int64_t>(d.size())};
  for (int64_t k : p) y_dims.push_back(d[static_cast<size_t>(k)]);
  attrs.insert(attrs.end(), d.begin(), d.end());
  attrs.insert(attrs.end(), p.begin(), p.end());
  Tensor x = random_f32(d, rng, -1, 1), y = f32(y_dims);
  assert_int_equal(run_op(OpCode::kPermute, {&x}, {&y}, Attrs{attrs, {}}).status, REMAT_OK);
  expect_close(y.f, ref_permute(to_double(x.f), d, p), 0.0, 0.0, "permute");
}

void permute_splits_heads_in_four_dimensions(void**) {
  check_permute({2, 5, 3, 4}, {0, 2, 1, 3});  // [B, T, H, D] -> [B, H, T, D].
}

void permute_moves_the_innermost_axis(void**) {
  check_permute({3, 4, 5}, {2, 0, 1});
  check_permute({2, 3, 2, 2, 3, 2}, {5, 4, 3, 2, 1, 0});
}

// Large enough for three threads' parts, each starting inside the outer axes' odometer.
void permute_in_threads_parts_matches_reference(void**) {
  check_permute({4, 130, 3, 40}, {0, 2, 1, 3});
  check_permute({50, 120, 7}, {2, 0, 1});
}

void copy_and_spill_traffic_copy_bytes(void**) {
  Rng rng(114);
  Tensor x = random_f32({3, 7}, rng, -1, 1), y = f32({21}), slot = f32({3, 7}), back = f32({3, 7});
  run_op(OpCode::kCopy, {&x}, {&y});
  run_op(OpCode::kSpill, {&x}, {&slot});
  run_op(OpCode::kPrefetch, {&slot}, {&back});
  assert_int_equal(run_op(OpCode::kWait, {&slot}, {}).status, REMAT_OK);
  assert_memory_equal(y.f.data(), x.f.data(), 21 * sizeof(float));
  assert_memory_equal(back.f.data(), x.f.data(), 21 * sizeof(float));
}

void select_on_axis_one_matches_reference(void**) {
  Rng rng(115);
  Tensor x = random_f32({3, 4, 5}, rng, -1, 1), y = f32({3, 5});
  assert_int_equal(run_op(OpCode::kSelect, {&x}, {&y}, Attrs{{1, 3}, {}}).status, REMAT_OK);
  expect_close(y.f, ref_select(to_double(x.f), {3, 4, 5}, 1, 3), 0.0, 0.0, "select");
}

void softmax_cross_entropy_matches_reference(void**) {
  Rng rng(116);
  Tensor logits = random_f32({6, 10}, rng, -3, 3), labels = i32({6}, {0, 9, 4, 4, 2, 7});
  Tensor loss = f32({1}), probs = f32({6, 10});
  assert_int_equal(run_op(OpCode::kSoftmaxCrossEntropy, {&logits, &labels}, {&loss, &probs}).status,
                   REMAT_OK);
  const Vec lv = to_double(logits.f);
  expect_close(loss.f, {ref_cross_entropy(lv, labels.i, 10)}, kTol, kTol, "loss");
  expect_close(probs.f, ref_softmax(lv, 10), kTol, kTol, "probs");
}

void mse_matches_reference(void**) {
  Rng rng(117);
  Tensor pred = random_f32({4, 9}, rng, -1, 1), target = random_f32({4, 9}, rng, -1, 1),
         loss = f32({1});
  run_op(OpCode::kMse, {&pred, &target}, {&loss});
  expect_close(loss.f, {ref_mse(to_double(pred.f), to_double(target.f))}, kTol, kTol, "mse");
}

// Optimizer tensors long enough for three threads' parts (16384 elements each).
constexpr int64_t kUpdateElements = 40000;

void check_sgd(float momentum) {
  Rng rng(118);
  Tensor param = random_f32({kUpdateElements}, rng, -1, 1), vel = f32({kUpdateElements});
  Vec rp = to_double(param.f), rv(kUpdateElements, 0.0);
  const float lr = 0.1f, wd = 0.01f;
  for (uint64_t step = 0; step < 3; ++step) {
    Tensor grad = random_f32({kUpdateElements}, rng, -1, 1);
    const Attrs attrs{{}, {lr, momentum, wd}, {1, step}};
    if (momentum != 0.0f) {
      run_op(OpCode::kSgdUpdate, {&param, &grad, &vel}, {&param, &vel}, attrs);
    } else {
      run_op(OpCode::kSgdUpdate, {&param, &grad}, {&param}, attrs);
    }
    ref_sgd(&rp, to_double(grad.f), &rv, lr, momentum, wd);
  }
  expect_close(param.f, rp, kTol, kTol, "param");
  if (momentum != 0.0f) expect_close(vel.f, rv, kTol, kTol, "velocity");
}

void sgd_matches_reference_for_three_steps(void**) {
  check_sgd(0.0f);
  check_sgd(0.9f);
}

void check_adam(bool decoupled) {
  Rng rng(119);
  Tensor param = random_f32({kUpdateElements}, rng, -1, 1), m = f32({kUpdateElements}),
         v = f32({kUpdateElements});
  Vec rp = to_double(param.f), rm(kUpdateElements, 0.0), rv(kUpdateElements, 0.0);
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.1f;
  for (uint64_t step = 0; step < 3; ++step) {
    Tensor grad = random_f32({kUpdateElements}, rng, -1, 1);
    run_op(OpCode::kAdamUpdate, {&param, &grad, &m, &v}, {&param, &m, &v},
           Attrs{{decoupled ? 1 : 0}, {lr, b1, b2, eps, wd}, {1, step}});
    ref_adam(&rp, to_double(grad.f), &rm, &rv, lr, b1, b2, eps, wd, decoupled, step);
  }
  expect_close(param.f, rp, kTol, kTol, "param");
  expect_close(m.f, rm, kTol, kTol, "m");
  expect_close(v.f, rv, 1e-7, kTol, "v");
}

void adam_matches_reference_for_three_steps(void**) { check_adam(false); }

void adamw_matches_reference_for_three_steps(void**) { check_adam(true); }

// Non-finite elements in the second and third of three threads' parts: the report names the
// lowest position, as one thread scanning in order would (run_op compares the messages).
void finite_check_names_the_first_nonfinite_element_across_threads(void**) {
  Tensor x = f32({kUpdateElements}, std::vector<float>(kUpdateElements, 0.25f));
  assert_int_equal(run_op(OpCode::kFiniteCheck, {&x}, {}).status, REMAT_OK);
  x.f[39000] = NAN;
  x.f[20000] = INFINITY;
  x.f[16390] = -INFINITY;
  const RunResult r = run_op(OpCode::kFiniteCheck, {&x}, {});
  assert_int_equal(r.status, REMAT_ERROR_NONFINITE);
  assert_string_equal(r.message.c_str(), "element 16390 is -inf (op 7, finite_check)");
}

// Each non-finite kind alone (NaNs of either sign and any payload, both infinities) is found,
// in the last thread's part; the extremes of the finite floats (the largest, the smallest
// subnormal, negative zero) are not reported.
void finite_check_finds_every_nonfinite_kind_and_passes_every_finite_extreme(void**) {
  const uint32_t nonfinite[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u,
                                0xff812345u, 0x7f800000u, 0xff800000u};
  const uint32_t finite[] = {0x7f7fffffu, 0xff7fffffu, 0x00000001u,
                             0x80000001u, 0x80000000u, 0x3f800000u};
  for (uint32_t bits : nonfinite) {
    Tensor x = f32({kUpdateElements}, std::vector<float>(kUpdateElements, 0.25f));
    memcpy(&x.f[kUpdateElements - 3], &bits, sizeof bits);
    const RunResult r = run_op(OpCode::kFiniteCheck, {&x}, {});
    assert_int_equal(r.status, REMAT_ERROR_NONFINITE);
    assert_non_null(strstr(r.message.c_str(),
                           ("element " + std::to_string(kUpdateElements - 3) + " is").c_str()));
  }
  Tensor x = f32({kUpdateElements}, std::vector<float>(kUpdateElements, 0.25f));
  for (size_t i = 0; i < sizeof finite / sizeof finite[0]; ++i)
    memcpy(&x.f[kUpdateElements - 1 - i], &finite[i], 4);
  const RunResult r = run_op(OpCode::kFiniteCheck, {&x}, {});
  assert_int_equal(r.status, REMAT_OK);
}

void embedding_id_out_of_range_is_a_step_error_naming_the_id(void**) {
  Tensor table = f32({4, 2}), ids = i32({3}, {1, 4, 0}), y = f32({3, 2});
  const RunResult r = run_op(OpCode::kEmbedding, {&ids, &table}, {&y});
  assert_int_equal(r.status, REMAT_ERROR_OUT_OF_RANGE);
  assert_string_equal(r.message.c_str(), "op 7 (embedding): id 4 at position 1 outside [0, 4)");
  Tensor negative = i32({1}, {-3}), dy = f32({1, 2}), dtable = f32({4, 2}), y1 = f32({1, 2});
  assert_int_equal(run_op(OpCode::kEmbedding, {&negative, &table}, {&y1}).status,
                   REMAT_ERROR_OUT_OF_RANGE);
  const RunResult g = run_op(OpCode::kEmbeddingGrad, {&dy, &negative}, {&dtable});
  assert_int_equal(g.status, REMAT_ERROR_OUT_OF_RANGE);
  assert_non_null(strstr(g.message.c_str(), "id -3"));
}

void cross_entropy_label_out_of_range_is_a_step_error_naming_the_label(void**) {
  Tensor logits = f32({2, 3}), labels = i32({2}, {2, 3}), loss = f32({1}), probs = f32({2, 3});
  const RunResult r = run_op(OpCode::kSoftmaxCrossEntropy, {&logits, &labels}, {&loss, &probs});
  assert_int_equal(r.status, REMAT_ERROR_OUT_OF_RANGE);
  assert_string_equal(r.message.c_str(),
                      "op 7 (softmax_cross_entropy): label 3 at position 1 outside [0, 3)");
  Tensor dlogits = f32({2, 3});
  const RunResult g = run_op(OpCode::kSoftmaxCrossEntropyGrad, {&probs, &labels}, {&dlogits});
  assert_int_equal(g.status, REMAT_ERROR_OUT_OF_RANGE);
  assert_non_null(strstr(g.message.c_str(), "label 3"));
}

void kernel_table_has_every_op_and_nothing_else(void**) {
  assert_null(remat::cpu::kernel_for(0));
  assert_null(remat::cpu::kernel_for(9999));
  assert_null(remat::cpu::kernel_for(remat::kOpCodeCount));
  for (uint16_t c = 1; c < remat::kOpCodeCount; ++c) {
    if (remat::cpu::kernel_for(c) == nullptr)
      fail_msg("no CPU kernel for op %s", remat::op_name(c));
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matmul_batched_mode_matches_reference),
      cmocka_unit_test(matmul_broadcast_mode_matches_reference),
      cmocka_unit_test(matmul_reduce_mode_matches_reference),
      cmocka_unit_test(matmul_reduce_mode_in_tiles_matches_reference),
      cmocka_unit_test(matmul_matches_reference_around_its_cuts),
      cmocka_unit_test(matmul_of_plain_matrices_matches_reference),
      cmocka_unit_test(matmul_run_twice_gives_identical_bytes),
      cmocka_unit_test(head_matmul_matches_reference_in_every_layout),
      cmocka_unit_test(head_matmul_gives_the_bytes_of_matmul_on_permuted_heads),
      cmocka_unit_test(matmul_with_bias_gives_the_bytes_of_matmul_then_bias_add),
      cmocka_unit_test(bias_add_and_reduce_leading_match_reference),
      cmocka_unit_test(add_mul_and_scale_match_reference),
      cmocka_unit_test(activations_match_reference),
      cmocka_unit_test(softmax_matches_reference_and_survives_large_logits),
      cmocka_unit_test(layernorm_matches_reference),
      cmocka_unit_test(dropout_matches_reference),
      cmocka_unit_test(dropout_keeps_about_one_minus_p_of_the_elements),
      cmocka_unit_test(nan_and_infinity_propagate_through_activations_and_dropout),
      cmocka_unit_test(dropout_mask_depends_only_on_seed_step_and_key),
      cmocka_unit_test(embedding_matches_reference),
      cmocka_unit_test(permute_splits_heads_in_four_dimensions),
      cmocka_unit_test(permute_moves_the_innermost_axis),
      cmocka_unit_test(permute_in_threads_parts_matches_reference),
      cmocka_unit_test(copy_and_spill_traffic_copy_bytes),
      cmocka_unit_test(select_on_axis_one_matches_reference),
      cmocka_unit_test(softmax_cross_entropy_matches_reference),
      cmocka_unit_test(mse_matches_reference),
      cmocka_unit_test(sgd_matches_reference_for_three_steps),
      cmocka_unit_test(adam_matches_reference_for_three_steps),
      cmocka_unit_test(adamw_matches_reference_for_three_steps),
      cmocka_unit_test(finite_check_names_the_first_nonfinite_element_across_threads),
      cmocka_unit_test(finite_check_finds_every_nonfinite_kind_and_passes_every_finite_extreme),
      cmocka_unit_test(embedding_id_out_of_range_is_a_step_error_naming_the_id),
      cmocka_unit_test(cross_entropy_label_out_of_range_is_a_step_error_naming_the_label),
      cmocka_unit_test(kernel_table_has_every_op_and_nothing_else),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
