// The fused attention kernel (backends/cpu/ops/attention.cc) against the float64 attention of
// op_reference_attention.h: context and lse, dropout's elements against the unfused dropout's,
// a fully masked row, and bits independent of the thread count. Its gradient is in
// test_ops_gradients.cc, its per-instruction-set builds in test_ops_attention_builds.cc.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tests/cmocka_cpp.h"
#include <math.h>

#include "backends/cpu/kernels.h"
#include "op_harness.h"
#include "op_reference.h"
#include "op_reference_attention.h"

using namespace ops_test;
using remat::OpCode;

namespace {

// lse's tolerance: one log of a sum of O(1) terms, |got - want| <= 1e-5 + 1e-5 * |want|.
constexpr double kTol = 1e-5;

// Attention runs 16 queries x 64 keys at a time, 64 queries a forward unit, and transposes 64
// of D or Dv at a time (backends/cpu/ops/attention.cc): these cross and stop short of each, with
// D and Dv not multiples of eight float lanes, Dv != D,
// Sq != Sk, both masks (causal ones with -inf) and dropout.
constexpr AttentionProblem kAttentionForward[] = {
    {"one head, one query, one key", 1, 1, 1, 1, 4, 4, AttentionMask::kNone, false, 0.0f},
    {"Sq 3, Sk 63", 2, 3, 63, 2, 5, 3, AttentionMask::kNone, false, 0.0f},
    {"Sk 64, shared mask", 1, 17, 64, 3, 7, 9, AttentionMask::kShared, false, 0.0f},
    {"Sk 65, causal shared mask", 2, 65, 65, 2, 9, 9, AttentionMask::kShared, true, 0.0f},
    {"Sk 130, per-batch mask, dropout", 2, 33, 130, 2, 6, 5, AttentionMask::kPerBatch, false, 0.1f},
    {"causal per-batch mask, dropout", 2, 20, 20, 3, 8, 4, AttentionMask::kPerBatch, true, 0.1f},
    {"Sk 3 under 40 queries, dropout", 1, 40, 3, 1, 11, 13, AttentionMask::kNone, false, 0.1f},
    {"Sk 1, dropout", 3, 5, 1, 2, 3, 2, AttentionMask::kNone, false, 0.1f},
    {"D 70, Dv 66: past the 64-float transposes", 1, 20, 70, 2, 70, 66, AttentionMask::kShared,
     false, 0.1f},
};

// The forward's inputs of |pr| as the kernel takes them: q, k, v and the mask when it has one.
std::vector<Tensor*> attention_ins(const AttentionProblem& pr, AttentionInputs& in) {
  std::vector<Tensor*> ins{&in.q, &in.k, &in.v};
  if (pr.mask != AttentionMask::kNone) ins.push_back(&in.mask);
  return ins;
}

// Context and lse against float64 attention; both start as NaN, so an element left unwritten
// fails. The context sums Sk products of D-long dot products (kMm's 1e-4).
void attention_matches_reference(void**) {
  uint64_t seed = 150;
  for (const AttentionProblem& pr : kAttentionForward) {
    AttentionInputs in = attention_inputs(pr, seed++);
    Tensor context = f32(pr.context_dims()), lse = f32(pr.lse_dims());
    for (float& x : context.f) x = NAN;
    for (float& x : lse.f) x = NAN;
    assert_int_equal(
        run_op(OpCode::kAttention, attention_ins(pr, in), {&context, &lse}, pr.attrs()).status,
        REMAT_OK);
    Vec want_lse;
    const Vec want = ref_attention(pr, to_double(in.q.f), to_double(in.k.f), to_double(in.v.f),
                                   to_double(in.mask.f), &want_lse);
    char what[96];
    snprintf(what, sizeof(what), "context (%s)", pr.name);
    expect_close(context.f, want, 1e-4, 1e-4, what);
    snprintf(what, sizeof(what), "lse (%s)", pr.name);
    expect_close(lse.f, want_lse, kTol, kTol, what);
  }
}

// Dropout's bits are the unfused path's: with v the identity (Sk = Dv), context row i of head h
// is row i of dropout(softmax(s)), element for element.
void attention_drops_out_the_unfused_dropouts_elements(void**) {
  const AttentionProblem pr{"identity v", 2, 9, 6, 2, 4, 6, AttentionMask::kNone, false, 0.3f};
  AttentionInputs in = attention_inputs(pr, 160);
  for (int64_t b = 0; b < pr.batch; ++b) {
    for (int64_t j = 0; j < pr.sk; ++j) {
      for (int64_t h = 0; h < pr.heads; ++h) {
        for (int64_t c = 0; c < pr.dv; ++c) {
          in.v.f[static_cast<size_t>(((b * pr.sk + j) * pr.heads + h) * pr.dv + c)] = c == j;
        }
      }
    }
  }
  Tensor context = f32(pr.context_dims()), lse = f32(pr.lse_dims());
  run_op(OpCode::kAttention, attention_ins(pr, in), {&context, &lse}, pr.attrs());
  const Attrs at = pr.attrs();
  int64_t dropped = 0;
  for (int64_t b = 0; b < pr.batch; ++b) {
    for (int64_t h = 0; h < pr.heads; ++h) {
      for (int64_t i = 0; i < pr.sq; ++i) {
        for (int64_t j = 0; j < pr.sk; ++j) {
          const uint64_t e = static_cast<uint64_t>(((b * pr.heads + h) * pr.sq + i) * pr.sk + j);
          const bool keep = ref_dropout_keep(at.ctx.seed, at.ctx.step, 5, e, pr.p);
          const float got =
              context.f[static_cast<size_t>(((b * pr.sq + i) * pr.heads + h) * pr.dv + j)];
          if (keep != (got != 0.0f))
            fail_msg("element %llu: keep %d, got %g", static_cast<unsigned long long>(e), keep,
                     got);
          dropped += !keep;
        }
      }
    }
  }
  assert_true(dropped > 0);
}

// A query whose every key is masked (-inf) is the caller's mistake: its context is NaN and its
// lse -inf, the other rows are unaffected, and the gradient runs to the end.
void attention_of_a_fully_masked_row_is_nan_and_spares_the_others(void**) {
  const AttentionProblem pr{"masked row", 1, 3, 70, 1, 4, 3, AttentionMask::kShared, false, 0.0f};
  AttentionInputs in = attention_inputs(pr, 161);
  for (int64_t j = 0; j < pr.sk; ++j) in.mask.f[static_cast<size_t>(pr.sk + j)] = -INFINITY;
  Tensor context = f32(pr.context_dims()), lse = f32(pr.lse_dims());
  assert_int_equal(
      run_op(OpCode::kAttention, attention_ins(pr, in), {&context, &lse}, pr.attrs()).status,
      REMAT_OK);
  Vec want_lse;
  const Vec want = ref_attention(pr, to_double(in.q.f), to_double(in.k.f), to_double(in.v.f),
                                 to_double(in.mask.f), &want_lse);
  for (int64_t i : {0, 2}) {
    for (int64_t c = 0; c < pr.dv; ++c) {
      const size_t e = static_cast<size_t>(i * pr.dv + c);
      assert_true(fabs(context.f[e] - want[e]) <= 1e-4);
    }
    assert_true(fabs(lse.f[static_cast<size_t>(i)] - want_lse[static_cast<size_t>(i)]) <= 1e-4);
  }
  for (int64_t c = 0; c < pr.dv; ++c) assert_true(isnan(context.f[static_cast<size_t>(pr.dv + c)]));
  assert_true(isinf(lse.f[1]) && lse.f[1] < 0);
  Tensor dcontext = f32(pr.context_dims(), std::vector<float>(context.f.size(), 1.0f));
  Tensor dq = f32(pr.q_dims()), dk = f32(pr.k_dims()), dv = f32(pr.v_dims());
  assert_int_equal(
      run_op(OpCode::kAttentionGrad, {&dcontext, &in.q, &in.k, &in.v, &context, &lse, &in.mask},
             {&dq, &dk, &dv}, pr.attrs())
          .status,
      REMAT_OK);
}

// Forward and backward at 1, 2 and 3 threads give the same bits (run_op compares 1 and 3).
void attention_bits_do_not_depend_on_the_thread_count(void**) {
  const AttentionProblem pr{"threads", 2, 40, 70, 3, 5, 6, AttentionMask::kPerBatch, true, 0.1f};
  AttentionInputs in = attention_inputs(pr, 162);
  Rng rng(163);
  Tensor dcontext = random_f32(pr.context_dims(), rng, -1, 1);
  std::vector<std::vector<float>> first;
  for (uint32_t threads = 1; threads <= 3; ++threads) {
    Tensor context = f32(pr.context_dims()), lse = f32(pr.lse_dims());
    assert_int_equal(run_op_on_threads(OpCode::kAttention, attention_ins(pr, in), {&context, &lse},
                                       pr.attrs(), threads)
                         .status,
                     REMAT_OK);
    Tensor dq = f32(pr.q_dims()), dk = f32(pr.k_dims()), dv = f32(pr.v_dims());
    assert_int_equal(run_op_on_threads(OpCode::kAttentionGrad,
                                       {&dcontext, &in.q, &in.k, &in.v, &context, &lse, &in.mask},
                                       {&dq, &dk, &dv}, pr.attrs(), threads)
                         .status,
                     REMAT_OK);
    const std::vector<std::vector<float>> got{context.f, lse.f, dq.f, dk.f, dv.f};
    if (threads == 1) {
      first = got;
      continue;
    }
    for (size_t t = 0; t < got.size(); ++t) {
      if (memcmp(got[t].data(), first[t].data(), got[t].size() * sizeof(float)) != 0) {
        fail_msg("attention: output %zu differs between 1 and %u threads", t, threads);
      }
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(attention_matches_reference),
      cmocka_unit_test(attention_drops_out_the_unfused_dropouts_elements),
      cmocka_unit_test(attention_of_a_fully_masked_row_is_nan_and_spares_the_others),
      cmocka_unit_test(attention_bits_do_not_depend_on_the_thread_count),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
