// Float64 reference of fused attention (plan/op_catalogue.h: attention), written from the
// catalogue's contract as the unfused path computes it (scores, softmax, Philox dropout,
// context) with every score of a row held at once; plus the problems and inputs the forward and
// gradient tests share.
#ifndef REMAT_TESTS_OPS_OP_REFERENCE_ATTENTION_H_
#define REMAT_TESTS_OPS_OP_REFERENCE_ATTENTION_H_

#include <stdint.h>

#include <vector>

#include "op_harness.h"
#include "op_reference.h"

namespace ops_test {

/// Which mask an attention problem adds to its scores.
enum class AttentionMask { kNone, kShared, kPerBatch };

/// One attention problem: q [batch, sq, heads * d], k [batch, sk, heads * d], v [batch, sk,
/// heads * dv], the mask [sq, sk] or [batch, sq, sk], attributes heads, key, scale, p.
struct AttentionProblem {
  const char* name;
  int64_t batch, sq, sk, heads, d, dv;
  AttentionMask mask;
  bool causal;  ///< The mask holds -inf above the diagonal (j > i) besides its random values.
  float p;      ///< Dropout probability.

  std::vector<int64_t> q_dims() const;
  std::vector<int64_t> k_dims() const;
  std::vector<int64_t> v_dims() const;
  std::vector<int64_t> mask_dims() const;
  std::vector<int64_t> context_dims() const;
  std::vector<int64_t> lse_dims() const;
  float scale() const;  ///< 1 / sqrt(d).
  Attrs attrs() const;  ///< heads, key 5; scale, p; seed 99, step 3.
};

/// Inputs of |pr| from |seed|: q, k, v uniform in [-1, 1), the mask (empty without one) uniform
/// in [-2, 0) with -inf above the diagonal when causal.
struct AttentionInputs {
  Tensor q, k, v, mask;
};
AttentionInputs attention_inputs(const AttentionProblem& pr, uint64_t seed);

/// context [batch, sq, heads * dv] of |pr| (lse [batch, heads, sq] into |lse| when not null),
/// |mask| empty when the problem has none, dropout drawn from (seed, step, key) of pr.attrs().
Vec ref_attention(const AttentionProblem& pr, const Vec& q, const Vec& k, const Vec& v,
                  const Vec& mask, Vec* lse);

}  // namespace ops_test

#endif  // REMAT_TESTS_OPS_OP_REFERENCE_ATTENTION_H_
