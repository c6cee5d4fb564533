// Every backward kernel against float64 central finite differences of an independent float64
// forward (op_reference.h), with the scalar objective L = sum(w * y) and random w (losses: L is
// the loss itself).
//
// Tolerance: |kernel - fd| <= 1e-3 + 1e-3 * |fd|. The reference and the differences are float64
// (h = 1e-5 leaves truncation error near 1e-10), so the budget is for the kernel's float32
// rounding of O(1) values, which stays far below 1e-4 on these small shapes.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/cmocka_cpp.h"
#include <math.h>

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/autodiff.h"
#include "compiler/builder.h"
#include "compiler/optimizer.h"
#include "backends/cpu/ops/work_splits.h"
#include "op_harness.h"
#include "op_reference.h"
#include "op_reference_attention.h"

using namespace ops_test;
using remat::OpCode;

namespace {

// C = alpha op(A) op(B); dA and dB come from matmul calls as a compiler emits them, in the
// modes ops.h allows. When a mode can only produce the transpose of a gradient (a shared
// operand may only be B), the test transposes it back, as a compiler's permute would.
void check_matmul_gradients(MatMulMode mode) {
  Rng rng(11 + static_cast<uint64_t>(mode));
  for (int combo = 0; combo < 4; ++combo) {
    MatMulCase mc{mode, (combo & 1) != 0, (combo & 2) != 0, 3, 4, 5, 3};
    const float alpha = 0.75f;
    const int64_t ta = mc.trans_a, tb = mc.trans_b;
    Tensor a = random_f32(mc.a_dims(), rng, -1, 1);
    Tensor b = random_f32(mc.b_dims(), rng, -1, 1);
    Tensor dc = random_f32(mc.c_dims(), rng, -1, 1);
    const Vec w = to_double(dc.f), av = to_double(a.f), bv = to_double(b.f);
    const Attrs at_a0{{0, !tb}, {alpha}}, at_bt{{tb, 1}, {alpha}};
    const Attrs at_b0{{!ta, 0}, {alpha}}, at_1a{{1, ta}, {alpha}};
    Tensor da, db;
    bool da_transposed = false, db_transposed = false;
    switch (mode) {
      case MatMulMode::kBatched:
        da = f32(mc.a_dims());
        db = f32(mc.b_dims());
        run_op(OpCode::kMatMul, ta ? std::vector<Tensor*>{&b, &dc} : std::vector<Tensor*>{&dc, &b},
               {&da}, ta ? at_bt : at_a0);
        run_op(OpCode::kMatMul, tb ? std::vector<Tensor*>{&dc, &a} : std::vector<Tensor*>{&a, &dc},
               {&db}, tb ? at_1a : at_b0);
        break;
      case MatMulMode::kBroadcast:  // dA: broadcast mode; dB: reduce mode.
        da = f32({mc.batch, mc.m, mc.k});
        da_transposed = ta;
        db = f32(mc.b_dims());
        run_op(OpCode::kMatMul, {&dc, &b}, {&da}, at_a0);
        run_op(OpCode::kMatMul, tb ? std::vector<Tensor*>{&dc, &a} : std::vector<Tensor*>{&a, &dc},
               {&db}, tb ? at_1a : at_b0);
        break;
      case MatMulMode::kReduce:  // dA and dB: broadcast mode with the shared dC as B.
        da = f32({mc.batch, mc.k, mc.m});
        da_transposed = !ta;
        db = f32({mc.batch, mc.k, mc.n});
        db_transposed = tb;
        run_op(OpCode::kMatMul, {&b, &dc}, {&da}, at_bt);
        run_op(OpCode::kMatMul, {&a, &dc}, {&db}, at_b0);
        break;
    }
    if (da_transposed) da.f = transpose_last2(da.f, mc.batch, da.dims[1], da.dims[2]);
    if (db_transposed) db.f = transpose_last2(db.f, mc.batch, db.dims[1], db.dims[2]);
    const Vec fd_a = fd_of([&](const Vec& x) { return ref_matmul(mc, alpha, x, bv); }, av, w);
    const Vec fd_b = fd_of([&](const Vec& x) { return ref_matmul(mc, alpha, av, x); }, bv, w);
    expect_grad(da.f, fd_a,
                combo == 0   ? "dA (nn)"
                : combo == 1 ? "dA (tn)"
                : combo == 2 ? "dA (nt)"
                             : "dA (tt)");
    expect_grad(db.f, fd_b,
                combo == 0   ? "dB (nn)"
                : combo == 1 ? "dB (tn)"
                : combo == 2 ? "dB (nt)"
                             : "dB (tt)");
  }
}

void matmul_batched_backward_matches_finite_differences(void**) {
  check_matmul_gradients(MatMulMode::kBatched);
}

void matmul_broadcast_backward_matches_finite_differences(void**) {
  check_matmul_gradients(MatMulMode::kBroadcast);
}

void matmul_reduce_backward_matches_finite_differences(void**) {
  check_matmul_gradients(MatMulMode::kReduce);
}

// head_matmul's backward as the compiler's autodiff emits it (a graph of the op and an mse
// loss): every transpose combination and interleaved layout, each gradient op run on the CPU
// kernel against finite differences of the float64 product.
void head_matmul_backward_from_autodiff_matches_finite_differences(void**) {
  namespace rc = remat::compiler;
  Rng rng(13);
  for (int combo = 0; combo < 4; ++combo) {
    for (int64_t layout = 0; layout <= 7; ++layout) {
      const HeadMatMulCase hc{2, 3, 4, 5, 3, (combo & 1) != 0, (combo & 2) != 0, layout};
      const float alpha = 0.75f;
      rc::Graph g;
      rc::Builder builder(&g);
      const int a = builder.param("a", hc.a().dims(), rc::Init::kUniform, 1.0f);
      const int b = builder.param("b", hc.b().dims(), rc::Init::kUniform, 1.0f);
      const int c = builder.head_matmul(a, b, hc.trans_a, hc.trans_b, alpha, hc.heads, layout,
                                        hc.c().dims(), "c");
      builder.mse(c, builder.label("target", REMAT_DTYPE_F32, hc.c().dims()));
      rc::append_backward_and_updates(g, rc::parse_optimizer("sgd:lr=0.1"), rc::FiniteChecks::kOff);
      const int dc_id = g.find("grad.c");
      assert_true(dc_id >= 0);

      Tensor ta = random_f32(hc.a().dims(), rng, -1, 1), tb = random_f32(hc.b().dims(), rng, -1, 1);
      Tensor tdc = random_f32(hc.c().dims(), rng, -1, 1);
      const Vec w = to_double(tdc.f), av = to_double(ta.f), bv = to_double(tb.f);
      int found = 0;
      for (const rc::Op& op : g.ops) {
        if (op.phase != rc::Phase::kBackward || op.code != OpCode::kHeadMatMul) continue;
        std::vector<Tensor*> ins;
        for (int id : op.inputs) {
          assert_true(id == a || id == b || id == dc_id);
          ins.push_back(id == a ? &ta : id == b ? &tb : &tdc);
        }
        const std::string target = g.tensors[op.outputs[0]].name;
        Tensor grad = f32(g.tensors[op.outputs[0]].shape);
        assert_int_equal(
            run_op(OpCode::kHeadMatMul, ins, {&grad}, Attrs{op.iattrs, op.fattrs}).status,
            REMAT_OK);
        char what[64];
        snprintf(what, sizeof(what), "%s (trans %d%d, interleaved %lld)", target.c_str(),
                 hc.trans_a, hc.trans_b, static_cast<long long>(layout));
        if (target == "grad.a") {
          expect_grad(grad.f,
                      fd_of([&](const Vec& x) { return ref_head_matmul(hc, alpha, x, bv); }, av, w),
                      what);
        } else {
          assert_string_equal(target.c_str(), "grad.b");
          expect_grad(grad.f,
                      fd_of([&](const Vec& x) { return ref_head_matmul(hc, alpha, av, x); }, bv, w),
                      what);
        }
        ++found;
      }
      assert_int_equal(found, 2);
    }
  }
}

// The backward ops the compiler's autodiff emits for |y = build(x)| ([2, 3, 4] parameter x),
// run on the CPU kernels with y's gradient seeded as |w|, give x's gradient as finite
// differences of |reference| (float64, the forward op) do: which tensors a gradient op reads
// (sigmoid's output, not its input) and how it maps them (permute's inverse) are autodiff's.
void check_autodiff_gradient(const char* what,
                             const std::function<int(remat::compiler::Builder&, int)>& build,
                             const std::function<Vec(const Vec&)>& reference) {
  namespace rc = remat::compiler;
  Rng rng(31);
  rc::Graph g;
  rc::Builder builder(&g);
  const int x = builder.param("x", {2, 3, 4}, rc::Init::kUniform, 1.0f);
  const int y = build(builder, x);
  builder.mse(y, builder.label("target", REMAT_DTYPE_F32, g.tensors[y].shape));
  const size_t forward_ops = g.ops.size();
  rc::append_backward_and_updates(g, rc::parse_optimizer("sgd:lr=0.1"), rc::FiniteChecks::kOff);
  const int dy = g.find("grad." + g.tensors[y].name), dx = g.find("grad.x");
  assert_true(dy >= 0 && dx >= 0);
  std::map<int, Tensor> values;
  values[x] = random_f32({2, 3, 4}, rng, -2, 2);
  values[dy] = random_f32(g.tensors[y].shape, rng, -1, 1);
  // The forward op(s) before the loss, then every backward op after y's gradient was formed.
  bool seeded = false;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const rc::Op& op = g.ops[i];
    const bool forward = i + 1 < forward_ops;  // the last forward op is the loss
    if (op.phase == rc::Phase::kBackward && !seeded) {
      seeded = std::find(op.outputs.begin(), op.outputs.end(), dy) != op.outputs.end();
      continue;  // the loss's gradient: y's gradient is seeded instead
    }
    if (!forward && op.phase != rc::Phase::kBackward) continue;
    std::vector<Tensor*> ins, outs;
    for (int t : op.inputs) ins.push_back(&values.at(t));
    for (int t : op.outputs) {
      if (!values.count(t)) values[t] = f32(g.tensors[t].shape);
      outs.push_back(&values[t]);
    }
    assert_int_equal(run_op(op.code, ins, outs, Attrs{op.iattrs, op.fattrs}).status, REMAT_OK);
  }
  assert_true(seeded);
  expect_grad(values.at(dx).f,
              fd_of(reference, to_double(values.at(x).f), to_double(values.at(dy).f)), what);
}

void sigmoid_and_permute_gradients_from_autodiff_match_finite_differences(void**) {
  check_autodiff_gradient(
      "sigmoid", [](remat::compiler::Builder& b, int x) { return b.sigmoid(x, "y"); },
      [](const Vec& x) {
        Vec y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = 1.0 / (1.0 + exp(-x[i]));
        return y;
      });
  // [2, 3, 4] -> [4, 2, 3]: y[k][i][j] = x[i][j][k].
  check_autodiff_gradient(
      "permute",
      [](remat::compiler::Builder& b, int x) {
        return b.permute(x, {2, 3, 4}, {2, 0, 1}, {4, 2, 3}, "y");
      },
      [](const Vec& x) {
        Vec y(x.size());
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 4; ++k) y[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
        return y;
      });
}

void bias_add_backward_is_reduce_leading_and_matches_finite_differences(void**) {
  Rng rng(21);
  Tensor x = random_f32({2, 3, 4}, rng, -1, 1), b = random_f32({3, 4}, rng, -1, 1);
  Tensor dy = random_f32({2, 3, 4}, rng, -1, 1), db = f32({3, 4});
  run_op(OpCode::kReduceLeading, {&dy}, {&db});
  const Vec xv = to_double(x.f);
  const Vec fd = fd_of(
      [&](const Vec& bv) {
        Vec y(xv);
        for (size_t i = 0; i < y.size(); ++i) y[i] += bv[i % bv.size()];
        return y;
      },
      to_double(b.f), to_double(dy.f));
  expect_grad(db.f, fd, "db");
}

void add_backward_passes_the_gradient_through_and_matches_finite_differences(void**) {
  Rng rng(22);
  Tensor a = random_f32({3, 5}, rng, -1, 1), b = random_f32({3, 5}, rng, -1, 1);
  Tensor dy = random_f32({3, 5}, rng, -1, 1), da = f32({3, 5});
  // The compiler forwards dy to both inputs; a copy is the kernel that materialises it.
  run_op(OpCode::kCopy, {&dy}, {&da});
  const Vec bv = to_double(b.f);
  const Vec fd = fd_of(
      [&](const Vec& av) {
        Vec y(av);
        for (size_t i = 0; i < y.size(); ++i) y[i] += bv[i];
        return y;
      },
      to_double(a.f), to_double(dy.f));
  expect_grad(da.f, fd, "da");
}

void mul_backward_matches_finite_differences(void**) {
  Rng rng(23);
  Tensor a = random_f32({4, 3}, rng, -1, 1), b = random_f32({4, 3}, rng, -1, 1);
  Tensor dy = random_f32({4, 3}, rng, -1, 1), da = f32({4, 3}), db = f32({4, 3});
  run_op(OpCode::kMul, {&dy, &b}, {&da});
  run_op(OpCode::kMul, {&dy, &a}, {&db});
  const Vec av = to_double(a.f), bv = to_double(b.f), w = to_double(dy.f);
  auto prod = [](const Vec& x, const Vec& y) {
    Vec out(x);
    for (size_t i = 0; i < out.size(); ++i) out[i] *= y[i];
    return out;
  };
  expect_grad(da.f, fd_of([&](const Vec& x) { return prod(x, bv); }, av, w), "da");
  expect_grad(db.f, fd_of([&](const Vec& x) { return prod(av, x); }, bv, w), "db");
}

void scale_backward_matches_finite_differences(void**) {
  Rng rng(24);
  Tensor x = random_f32({7}, rng, -1, 1), dy = random_f32({7}, rng, -1, 1), dx = f32({7});
  const float alpha = -1.5f;
  run_op(OpCode::kScale, {&dy}, {&dx}, Attrs{{}, {alpha}});
  const Vec fd = fd_of(
      [&](const Vec& v) {
        Vec y(v);
        for (double& e : y) e *= alpha;
        return y;
      },
      to_double(x.f), to_double(dy.f));
  expect_grad(dx.f, fd, "dx");
}

// Unary activation: |grad_code| takes (dy, x) or (dy, y) as ops.h says; |f| is the reference.
void check_unary_gradient(OpCode grad_code, bool takes_output, double (*f)(double), uint64_t seed,
                          bool avoid_zero) {
  Rng rng(seed);
  Tensor x = f32({3, 6}), dy = random_f32({3, 6}, rng, -1, 1), dx = f32({3, 6});
  for (float& v : x.f) {
    v = static_cast<float>(avoid_zero ? rng.uniform_away_from_zero(-3, 3, 0.1)
                                      : rng.uniform(-3, 3));
  }
  const Vec xv = to_double(x.f);
  auto apply = [f](const Vec& v) {
    Vec y(v);
    for (double& e : y) e = f(e);
    return y;
  };
  Tensor saved = takes_output ? f32({3, 6}, to_float(apply(xv))) : x;
  run_op(grad_code, {&dy, &saved}, {&dx});
  expect_grad(dx.f, fd_of(apply, xv, to_double(dy.f)),
              remat::op_name(static_cast<uint16_t>(grad_code)));
}

void relu_backward_matches_finite_differences(void**) {
  check_unary_gradient(
      OpCode::kReluGrad, true, [](double v) { return v > 0 ? v : 0.0; }, 31, true);
}

void gelu_backward_matches_finite_differences(void**) {
  check_unary_gradient(OpCode::kGeluGrad, false, ref_gelu, 32, false);
}

void tanh_backward_matches_finite_differences(void**) {
  check_unary_gradient(
      OpCode::kTanhGrad, true, [](double v) { return tanh(v); }, 33, false);
}

void sigmoid_backward_matches_finite_differences(void**) {
  check_unary_gradient(
      OpCode::kSigmoidGrad, true, [](double v) { return 1.0 / (1.0 + exp(-v)); }, 34, false);
}

void check_softmax_backward(int64_t n) {
  Rng rng(41);
  Tensor x = random_f32({3, n}, rng, -2, 2), dy = random_f32({3, n}, rng, -1, 1), dx = f32({3, n});
  const Vec xv = to_double(x.f);
  Tensor y = f32({3, n}, to_float(ref_softmax(xv, n)));
  run_op(OpCode::kSoftmaxGrad, {&dy, &y}, {&dx});
  expect_grad(dx.f, fd_of([n](const Vec& v) { return ref_softmax(v, n); }, xv, to_double(dy.f)),
              "dx");
}

// Rows shorter than one run of eight sum lanes, and longer ones with a tail.
// attention_grad's dq, dk, dv against finite differences of the float64 attention, given the
// reference's context and lse rounded to float; the outputs start as NaN, so an element left
// unwritten fails. Shapes cross the kernel's 16-query and 64-key tiles and its 64 of D or Dv
// transposed at a time, and take both masks (causal ones with -inf) and dropout
// (backends/cpu/ops/attention.cc).
void attention_backward_matches_finite_differences(void**) {
  const AttentionProblem problems[] = {
      {"one query, one key", 1, 1, 1, 1, 3, 2, AttentionMask::kNone, false, 0.0f},
      {"two heads, causal shared mask", 2, 5, 7, 2, 3, 4, AttentionMask::kShared, true, 0.0f},
      {"per-batch mask, dropout", 2, 4, 6, 2, 3, 2, AttentionMask::kPerBatch, false, 0.1f},
      {"17 queries, 65 keys, causal, dropout", 1, 17, 65, 1, 3, 2, AttentionMask::kShared, true,
       0.1f},
      {"18 queries, D 70, Dv 66 past the 64-float transposes", 1, 18, 5, 1, 70, 66,
       AttentionMask::kNone, false, 0.0f},
  };
  uint64_t seed = 60;
  for (const AttentionProblem& pr : problems) {
    AttentionInputs in = attention_inputs(pr, seed++);
    Rng rng(seed++);
    Tensor dcontext = random_f32(pr.context_dims(), rng, -1, 1);
    const Vec qv = to_double(in.q.f), kv = to_double(in.k.f), vv = to_double(in.v.f);
    const Vec mv = to_double(in.mask.f), w = to_double(dcontext.f);
    Vec lse_v;
    Tensor context = f32(pr.context_dims(), to_float(ref_attention(pr, qv, kv, vv, mv, &lse_v)));
    Tensor lse = f32(pr.lse_dims(), to_float(lse_v));
    Tensor dq = f32(pr.q_dims()), dk = f32(pr.k_dims()), dv = f32(pr.v_dims());
    for (Tensor* t : {&dq, &dk, &dv}) {
      for (float& x : t->f) x = NAN;
    }
    std::vector<Tensor*> ins{&dcontext, &in.q, &in.k, &in.v, &context, &lse};
    if (pr.mask != AttentionMask::kNone) ins.push_back(&in.mask);
    assert_int_equal(run_op(OpCode::kAttentionGrad, ins, {&dq, &dk, &dv}, pr.attrs()).status,
                     REMAT_OK);
    char what[96];
    snprintf(what, sizeof(what), "dq (%s)", pr.name);
    expect_grad(
        dq.f, fd_of([&](const Vec& x) { return ref_attention(pr, x, kv, vv, mv, nullptr); }, qv, w),
        what);
    snprintf(what, sizeof(what), "dk (%s)", pr.name);
    expect_grad(
        dk.f, fd_of([&](const Vec& x) { return ref_attention(pr, qv, x, vv, mv, nullptr); }, kv, w),
        what);
    snprintf(what, sizeof(what), "dv (%s)", pr.name);
    expect_grad(
        dv.f, fd_of([&](const Vec& x) { return ref_attention(pr, qv, kv, x, mv, nullptr); }, vv, w),
        what);
  }
}

void softmax_backward_matches_finite_differences(void**) {
  check_softmax_backward(5);
  check_softmax_backward(37);
}

void check_layernorm_backward(int64_t n) {
  Rng rng(42);
  const double eps = 1e-5;
  Tensor x = random_f32({2, 3, n}, rng, -2, 2), dy = random_f32({2, 3, n}, rng, -1, 1);
  Tensor gamma = random_f32({n}, rng, 0.5, 1.5), beta = random_f32({n}, rng, -0.5, 0.5);
  const Vec xv = to_double(x.f), gv = to_double(gamma.f), bv = to_double(beta.f),
            w = to_double(dy.f);
  Vec y, mean, rstd;
  ref_layernorm(xv, gv, bv, n, eps, &y, &mean, &rstd);
  Tensor tm = f32({6}, to_float(mean)), tr = f32({6}, to_float(rstd));
  Tensor dx = f32({2, 3, n}), dgamma = f32({n}, std::vector<float>(n, 9.0f)), dbeta = f32({n});
  run_op(OpCode::kLayerNormGrad, {&dy, &x, &tm, &tr, &gamma}, {&dx, &dgamma, &dbeta});
  auto ln = [&](const Vec& xs, const Vec& gs, const Vec& bs) {
    Vec out, m, s;
    ref_layernorm(xs, gs, bs, n, eps, &out, &m, &s);
    return out;
  };
  expect_grad(dx.f, fd_of([&](const Vec& v) { return ln(v, gv, bv); }, xv, w), "dx");
  expect_grad(dgamma.f, fd_of([&](const Vec& v) { return ln(xv, v, bv); }, gv, w), "dgamma");
  expect_grad(dbeta.f, fd_of([&](const Vec& v) { return ln(xv, gv, v); }, bv, w), "dbeta");
}

// Rows shorter than one run of eight sum lanes, and rows of 70 (eight full runs and a tail)
// whose dgamma/dbeta columns three threads share; then widths around the kernel's column block
// (backends/cpu/ops/work_splits.h): one short, one, one past, and past three blocks, so that on
// one thread a pass of a whole block and a pass of its remainder both run (run_op compares 1,
// 2 and 3 threads).
void layernorm_backward_matches_finite_differences(void**) {
  check_layernorm_backward(6);
  check_layernorm_backward(70);
  constexpr int64_t kBlock = remat::cpu::kLayerNormColumnBlock;
  for (const int64_t n :
       {kBlock - 1, kBlock, kBlock + 1, 3 * kBlock + remat::cpu::kLayerNormColumnGrain + 1})
    check_layernorm_backward(n);
}

void dropout_backward_matches_finite_differences(void**) {
  Rng rng(43);
  const double p = 0.4;
  const Attrs attrs{{17}, {static_cast<float>(p)}, {99, 5}};
  Tensor x = random_f32({4, 8}, rng, -1, 1), dy = random_f32({4, 8}, rng, -1, 1), dx = f32({4, 8});
  run_op(OpCode::kDropoutGrad, {&dy}, {&dx}, attrs);
  const Vec fd = fd_of([&](const Vec& v) { return ref_dropout(v, 99, 5, 17, p); }, to_double(x.f),
                       to_double(dy.f));
  expect_grad(dx.f, fd, "dx");
}

void embedding_backward_accumulates_repeated_ids_and_matches_finite_differences(void**) {
  Rng rng(44);
  const int64_t h = 3;
  Tensor table = random_f32({5, h}, rng, -1, 1);
  Tensor ids = i32({2, 3}, {4, 0, 4, 2, 4, 1});
  Tensor dy = random_f32({2, 3, h}, rng, -1, 1), dtable = f32({5, h}, std::vector<float>(15, 3.0f));
  assert_int_equal(run_op(OpCode::kEmbeddingGrad, {&dy, &ids}, {&dtable}).status, REMAT_OK);
  const Vec fd = fd_of([&](const Vec& t) { return ref_embedding(ids.i, t, h); }, to_double(table.f),
                       to_double(dy.f));
  expect_grad(dtable.f, fd, "dtable");
}

void permute_backward_is_the_inverse_permute_and_matches_finite_differences(void**) {
  Rng rng(45);
  const std::vector<int64_t> d{2, 3, 4, 5}, p{2, 0, 3, 1};
  std::vector<int64_t> y_dims(4), inverse(4);
  for (size_t k = 0; k < 4; ++k) {
    y_dims[k] = d[static_cast<size_t>(p[k])];
    inverse[static_cast<size_t>(p[k])] = static_cast<int64_t>(k);
  }
  Tensor x = random_f32(d, rng, -1, 1), dy = random_f32(y_dims, rng, -1, 1), dx = f32(d);
  std::vector<int64_t> attrs{4};
  attrs.insert(attrs.end(), y_dims.begin(), y_dims.end());
  attrs.insert(attrs.end(), inverse.begin(), inverse.end());
  run_op(OpCode::kPermute, {&dy}, {&dx}, Attrs{attrs, {}});
  const Vec fd =
      fd_of([&](const Vec& v) { return ref_permute(v, d, p); }, to_double(x.f), to_double(dy.f));
  expect_grad(dx.f, fd, "dx");
}

void select_backward_matches_finite_differences(void**) {
  Rng rng(46);
  const std::vector<int64_t> d{2, 4, 3};
  Tensor x = random_f32(d, rng, -1, 1), dy = random_f32({2, 3}, rng, -1, 1);
  Tensor dx = f32(d, std::vector<float>(24, 5.0f));
  run_op(OpCode::kSelectGrad, {&dy}, {&dx}, Attrs{{1, 2}, {}});
  const Vec fd =
      fd_of([&](const Vec& v) { return ref_select(v, d, 1, 2); }, to_double(x.f), to_double(dy.f));
  expect_grad(dx.f, fd, "dx");
}

void softmax_cross_entropy_backward_matches_finite_differences(void**) {
  Rng rng(47);
  Tensor logits = random_f32({5, 4}, rng, -2, 2), labels = i32({5}, {3, 0, 1, 3, 2});
  const Vec lv = to_double(logits.f);
  Tensor probs = f32({5, 4}, to_float(ref_softmax(lv, 4))), dlogits = f32({5, 4});
  assert_int_equal(run_op(OpCode::kSoftmaxCrossEntropyGrad, {&probs, &labels}, {&dlogits}).status,
                   REMAT_OK);
  const Vec fd = numeric_grad([&](const Vec& v) { return ref_cross_entropy(v, labels.i, 4); }, lv);
  expect_grad(dlogits.f, fd, "dlogits");
}

void mse_backward_matches_finite_differences(void**) {
  Rng rng(48);
  Tensor pred = random_f32({3, 4}, rng, -1, 1), target = random_f32({3, 4}, rng, -1, 1);
  Tensor dpred = f32({3, 4});
  run_op(OpCode::kMseGrad, {&pred, &target}, {&dpred});
  const Vec tv = to_double(target.f);
  const Vec fd = numeric_grad([&](const Vec& v) { return ref_mse(v, tv); }, to_double(pred.f));
  expect_grad(dpred.f, fd, "dpred");
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matmul_batched_backward_matches_finite_differences),
      cmocka_unit_test(matmul_broadcast_backward_matches_finite_differences),
      cmocka_unit_test(matmul_reduce_backward_matches_finite_differences),
      cmocka_unit_test(head_matmul_backward_from_autodiff_matches_finite_differences),
      cmocka_unit_test(sigmoid_and_permute_gradients_from_autodiff_match_finite_differences),
      cmocka_unit_test(bias_add_backward_is_reduce_leading_and_matches_finite_differences),
      cmocka_unit_test(add_backward_passes_the_gradient_through_and_matches_finite_differences),
      cmocka_unit_test(mul_backward_matches_finite_differences),
      cmocka_unit_test(scale_backward_matches_finite_differences),
      cmocka_unit_test(relu_backward_matches_finite_differences),
      cmocka_unit_test(gelu_backward_matches_finite_differences),
      cmocka_unit_test(tanh_backward_matches_finite_differences),
      cmocka_unit_test(sigmoid_backward_matches_finite_differences),
      cmocka_unit_test(softmax_backward_matches_finite_differences),
      cmocka_unit_test(attention_backward_matches_finite_differences),
      cmocka_unit_test(layernorm_backward_matches_finite_differences),
      cmocka_unit_test(dropout_backward_matches_finite_differences),
      cmocka_unit_test(embedding_backward_accumulates_repeated_ids_and_matches_finite_differences),
      cmocka_unit_test(permute_backward_is_the_inverse_permute_and_matches_finite_differences),
      cmocka_unit_test(select_backward_matches_finite_differences),
      cmocka_unit_test(softmax_cross_entropy_backward_matches_finite_differences),
      cmocka_unit_test(mse_backward_matches_finite_differences),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
