// Float64 reference of fused attention (see op_reference_attention.h).
#include "op_reference_attention.h"

#include <math.h>

namespace ops_test {

std::vector<int64_t> AttentionProblem::q_dims() const { return {batch, sq, heads * d}; }
std::vector<int64_t> AttentionProblem::k_dims() const { return {batch, sk, heads * d}; }
std::vector<int64_t> AttentionProblem::v_dims() const { return {batch, sk, heads * dv}; }
std::vector<int64_t> AttentionProblem::mask_dims() const {
  if (mask == AttentionMask::kPerBatch) return {batch, sq, sk};
  return {sq, sk};
}
std::vector<int64_t> AttentionProblem::context_dims() const { return {batch, sq, heads * dv}; }
std::vector<int64_t> AttentionProblem::lse_dims() const { return {batch, heads, sq}; }
float AttentionProblem::scale() const { return static_cast<float>(1.0 / sqrt(double(d))); }
Attrs AttentionProblem::attrs() const { return Attrs{{heads, 5}, {scale(), p}, {99, 3}}; }

AttentionInputs attention_inputs(const AttentionProblem& pr, uint64_t seed) {
  Rng rng(seed);
  AttentionInputs in;
  in.q = random_f32(pr.q_dims(), rng, -1, 1);
  in.k = random_f32(pr.k_dims(), rng, -1, 1);
  in.v = random_f32(pr.v_dims(), rng, -1, 1);
  if (pr.mask != AttentionMask::kNone) {
    in.mask = random_f32(pr.mask_dims(), rng, -2, 0);
    for (size_t e = 0; e < in.mask.f.size(); ++e) {
      const int64_t j = static_cast<int64_t>(e) % pr.sk,
                    i = static_cast<int64_t>(e) / pr.sk % pr.sq;
      if (pr.causal && j > i) in.mask.f[e] = -INFINITY;
    }
  }
  return in;
}

Vec ref_attention(const AttentionProblem& pr, const Vec& q, const Vec& k, const Vec& v,
                  const Vec& mask, Vec* lse) {
  const int64_t hd = pr.heads * pr.d, hdv = pr.heads * pr.dv;
  const double scale = pr.scale(), p = pr.p;
  const Attrs at = pr.attrs();
  const uint64_t key = static_cast<uint64_t>(at.i[1]);
  Vec context(static_cast<size_t>(pr.batch * pr.sq * hdv), 0.0);
  if (lse != nullptr) lse->assign(static_cast<size_t>(pr.batch * pr.heads * pr.sq), 0.0);
  Vec s(static_cast<size_t>(pr.sk));
  for (int64_t b = 0; b < pr.batch; ++b) {
    for (int64_t h = 0; h < pr.heads; ++h) {
      for (int64_t i = 0; i < pr.sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < pr.sk; ++j) {
          double dot = 0.0;
          for (int64_t c = 0; c < pr.d; ++c) {
            dot += q[(b * pr.sq + i) * hd + h * pr.d + c] * k[(b * pr.sk + j) * hd + h * pr.d + c];
          }
          double m = 0.0;
          if (pr.mask == AttentionMask::kShared) m = mask[i * pr.sk + j];
          if (pr.mask == AttentionMask::kPerBatch) m = mask[(b * pr.sq + i) * pr.sk + j];
          s[j] = scale * dot + m;
          mx = fmax(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < pr.sk; ++j) sum += exp(s[j] - mx);
        if (lse != nullptr) (*lse)[(b * pr.heads + h) * pr.sq + i] = mx + log(sum);
        for (int64_t j = 0; j < pr.sk; ++j) {
          const uint64_t e = static_cast<uint64_t>(((b * pr.heads + h) * pr.sq + i) * pr.sk + j);
          const double prob = exp(s[j] - mx) / sum;
          const double dropped =
              ref_dropout_keep(at.ctx.seed, at.ctx.step, key, e, p) ? prob / (1.0 - p) : 0.0;
          for (int64_t c = 0; c < pr.dv; ++c) {
            context[(b * pr.sq + i) * hdv + h * pr.dv + c] +=
                dropped * v[(b * pr.sk + j) * hdv + h * pr.dv + c];
          }
        }
      }
    }
  }
  return context;
}

}  // namespace ops_test
