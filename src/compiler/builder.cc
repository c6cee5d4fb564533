// Layer-level graph construction on top of Graph::add_op.
#include "compiler/builder.h"

#include <cmath>

#include "plan/head_matmul_shape.h"

namespace remat {
namespace compiler {

int Builder::activation(const std::string& hint, std::vector<int64_t> shape, remat_dtype dtype) {
  return g_->add_tensor(g_->unique_name(hint), dtype, std::move(shape), Role::kActivation);
}

int Builder::input(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape) {
  const int index = g_->add_tensor(name, dtype, std::move(shape), Role::kInput);
  g_->inputs.push_back(index);
  return index;
}

int Builder::label(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape) {
  const int index = g_->add_tensor(name, dtype, std::move(shape), Role::kLabel);
  g_->labels.push_back(index);
  return index;
}

int Builder::param(const std::string& name, std::vector<int64_t> shape, Init init, float scale) {
  const int index =
      g_->add_tensor(name, REMAT_DTYPE_F32, std::move(shape), Role::kParam, init, scale);
  g_->params.push_back(index);
  return index;
}

int Builder::linear(int x, int64_t out_features, const std::string& prefix) {
  const int64_t in_features = t(x).shape.back();
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features));
  const int w = param(prefix + ".weight", {out_features, in_features}, Init::kUniform, bound);
  const int b = param(prefix + ".bias", {out_features}, Init::kUniform, bound);
  std::vector<int64_t> shape = t(x).shape;
  shape.back() = out_features;
  return matmul(x, w, false, true, 1.0f, shape, prefix + ".out", b);
}

int Builder::layer_norm(int x, const std::string& prefix, float eps) {
  const int64_t n = t(x).shape.back();
  const int gamma = param(prefix + ".weight", {n}, Init::kOnes, 0.0f);
  const int beta = param(prefix + ".bias", {n}, Init::kZeros, 0.0f);
  return layer_norm_with(x, gamma, beta, prefix, eps);
}

int Builder::layer_norm_with(int x, int gamma, int beta, const std::string& prefix, float eps) {
  const int64_t n = t(x).shape.back();
  const int64_t rows = t(x).numel() / n;
  const int y = activation(prefix + ".out", t(x).shape);
  const int mean = activation(prefix + ".mean", {rows});
  const int rstd = activation(prefix + ".rstd", {rows});
  g_->add_op(OpCode::kLayerNorm, {x, gamma, beta}, {y, mean, rstd}, {},
             named({{attr::layernorm::eps, eps}}));
  return y;
}

int Builder::dropout(int x, float p, const std::string& name) {
  if (p == 0.0f) return x;
  const int y = activation(name, t(x).shape);
  // The key is this op's index: unique in the graph, and kept by recomputed copies.
  const int64_t key = static_cast<int64_t>(g_->ops.size());
  g_->add_op(OpCode::kDropout, {x}, {y}, named({{attr::dropout::key, key}}),
             named({{attr::dropout::p, p}}));
  return y;
}

int Builder::attention(int q, int k, int v, int mask, int64_t heads, float scale, float p,
                       AttentionKernel kernel, const std::string& prefix) {
  const std::vector<int64_t> qs = t(q).shape, ks = t(k).shape, vs = t(v).shape;
  if (qs.size() != 3 || ks.size() != 3 || vs.size() != 3 || heads < 1 || qs[2] % heads != 0 ||
      vs[2] % heads != 0) {
    throw CompileError("attention '" + prefix + "': q, k and v must be [B, S, heads * D] with " +
                       std::to_string(heads) + " heads");
  }
  const int64_t batch = qs[0], sq = qs[1], sk = ks[1];
  if (kernel == AttentionKernel::kUnfused) {
    int scores = head_matmul(q, k, false, true, scale, heads, kHeadsOfA | kHeadsOfB,
                             {batch, heads, sq, sk}, prefix + ".scores");
    if (mask >= 0) {
      // The mask repeated over the heads (and the batch, for [Sq, Sk]), added to the scores.
      const bool per_batch = t(mask).shape.size() == 3;
      const int spread = broadcast(mask, per_batch ? 1 : 0, per_batch ? 1 : 2,
                                   {batch, heads, sq, sk}, prefix + ".mask_per_head");
      scores = add(scores, spread, prefix + ".masked_scores");
    }
    const int probs = dropout(softmax(scores, prefix + ".probs"), p, prefix + ".probs_dropout");
    return head_matmul(probs, v, false, false, 1.0f, heads, kHeadsOfB | kHeadsOfC,
                       {batch, sq, vs[2]}, prefix + ".context");
  }
  const int context = activation(prefix + ".context", {batch, sq, vs[2]});
  const int lse = activation(prefix + ".lse", {batch, heads, sq});
  // The key is this op's index, as dropout's: unique in the graph, kept by recomputed copies.
  const int64_t key = static_cast<int64_t>(g_->ops.size());
  std::vector<int> inputs{q, k, v};
  if (mask >= 0) inputs.push_back(mask);
  namespace a = attr::attention;
  g_->add_op(OpCode::kAttention, std::move(inputs), {context, lse},
             named({{a::heads, heads}, {a::key, p > 0.0f ? key : 0}}),
             named({{a::scale, scale}, {a::p, p}}));
  return context;
}

int Builder::unary(OpCode code, int x, const std::string& name, std::vector<float> fattrs) {
  const int y = activation(name, t(x).shape);
  g_->add_op(code, {x}, {y}, {}, std::move(fattrs));
  return y;
}

int Builder::relu(int x, const std::string& name) { return unary(OpCode::kRelu, x, name); }
int Builder::gelu(int x, const std::string& name) { return unary(OpCode::kGelu, x, name); }
int Builder::tanh(int x, const std::string& name) { return unary(OpCode::kTanh, x, name); }
int Builder::sigmoid(int x, const std::string& name) { return unary(OpCode::kSigmoid, x, name); }
int Builder::softmax(int x, const std::string& name) { return unary(OpCode::kSoftmax, x, name); }
int Builder::log_softmax(int x, const std::string& name) {
  return unary(OpCode::kLogSoftmax, x, name);
}
int Builder::pow_scalar(int x, float exponent, const std::string& name) {
  return unary(OpCode::kPowScalar, x, name, named({{attr::pow_scalar::exponent, exponent}}));
}
int Builder::square_root(int x, const std::string& name) {
  return unary(OpCode::kSquareRoot, x, name);
}
int Builder::leaky_relu(int x, float alpha, const std::string& name) {
  return unary(OpCode::kLeakyRelu, x, name, named({{attr::leaky_relu::alpha, alpha}}));
}

int Builder::clip(int x, float low, float high, const std::string& name) {
  return unary(OpCode::kClip, x, name, named({{attr::clip::low, low}, {attr::clip::high, high}}));
}

int Builder::hard_sigmoid(int x, float alpha, float beta, const std::string& name) {
  return unary(OpCode::kHardSigmoid, x, name,
               named({{attr::hard_sigmoid::alpha, alpha}, {attr::hard_sigmoid::beta, beta}}));
}
int Builder::error_function(int x, const std::string& name) {
  return unary(OpCode::kErrorFunction, x, name);
}

int Builder::reduce_sum(int x, int64_t axis, int64_t count, bool mean,
                        std::vector<int64_t> out_shape, const std::string& name) {
  const int y = activation(name, std::move(out_shape));
  namespace a = attr::reduce_sum;
  g_->add_op(OpCode::kReduceSum, {x}, {y},
             named({{a::axis, axis}, {a::count, count}, {a::mean, mean ? 1 : 0}}));
  return y;
}

int Builder::broadcast(int x, int64_t axis, int64_t count, std::vector<int64_t> out_shape,
                       const std::string& name) {
  const int y = activation(name, std::move(out_shape));
  namespace a = attr::broadcast;
  g_->add_op(OpCode::kBroadcast, {x}, {y},
             named({{a::axis, axis}, {a::count, count}, {a::mean, 0}}));
  return y;
}

int Builder::matmul(int a, int b, bool trans_a, bool trans_b, float alpha,
                    std::vector<int64_t> out_shape, const std::string& name, int bias) {
  const int y = activation(name, std::move(out_shape));
  std::vector<int> inputs{a, b};
  if (bias >= 0) inputs.push_back(bias);
  namespace m = attr::matmul;
  g_->add_op(OpCode::kMatMul, std::move(inputs), {y},
             named({{m::trans_a, trans_a ? 1 : 0}, {m::trans_b, trans_b ? 1 : 0}}),
             named({{m::alpha, alpha}}));
  return y;
}

int Builder::head_matmul(int a, int b, bool trans_a, bool trans_b, float alpha, int64_t heads,
                         int64_t interleaved, std::vector<int64_t> out_shape,
                         const std::string& name) {
  const int y = activation(name, std::move(out_shape));
  namespace m = attr::head_matmul;
  g_->add_op(OpCode::kHeadMatMul, {a, b}, {y},
             named({{m::trans_a, trans_a ? 1 : 0},
                    {m::trans_b, trans_b ? 1 : 0},
                    {m::heads, heads},
                    {m::interleaved, interleaved}}),
             named({{m::alpha, alpha}}));
  return y;
}

int Builder::add(int a, int b, const std::string& name) {
  const int y = activation(name, t(a).shape);
  g_->add_op(OpCode::kAdd, {a, b}, {y});
  return y;
}

int Builder::bias_add(int x, int b, const std::string& name) {
  const int y = activation(name, t(x).shape);
  g_->add_op(OpCode::kBiasAdd, {x, b}, {y});
  return y;
}

int Builder::embedding(int ids, int table, const std::string& name) {
  std::vector<int64_t> shape = t(ids).shape;
  shape.push_back(t(table).shape[1]);
  const int y = activation(name, shape);
  g_->add_op(OpCode::kEmbedding, {ids, table}, {y});
  return y;
}

int Builder::permute(int x, std::vector<int64_t> view_dims, std::vector<int64_t> perm,
                     std::vector<int64_t> out_shape, const std::string& name) {
  std::vector<int64_t> attrs{static_cast<int64_t>(view_dims.size())};
  attrs.insert(attrs.end(), view_dims.begin(), view_dims.end());
  attrs.insert(attrs.end(), perm.begin(), perm.end());
  const int y = activation(name, std::move(out_shape));
  g_->add_op(OpCode::kPermute, {x}, {y}, std::move(attrs));
  return y;
}

int Builder::select(int x, int axis, int64_t index, const std::string& name) {
  std::vector<int64_t> shape = t(x).shape;
  shape.erase(shape.begin() + axis);
  const int y = activation(name, shape);
  g_->add_op(OpCode::kSelect, {x}, {y},
             named({{attr::select::axis, axis}, {attr::select::index, index}}));
  return y;
}

int Builder::softmax_cross_entropy(int logits, int labels) {
  const int loss = g_->add_tensor("loss", REMAT_DTYPE_F32, {1}, Role::kLoss);
  const int probs = activation("probs", t(logits).shape);
  g_->add_op(OpCode::kSoftmaxCrossEntropy, {logits, labels}, {loss, probs});
  g_->loss = loss;
  return loss;
}

int Builder::mse(int pred, int target) {
  const int loss = g_->add_tensor("loss", REMAT_DTYPE_F32, {1}, Role::kLoss);
  g_->add_op(OpCode::kMse, {pred, target}, {loss});
  g_->loss = loss;
  return loss;
}

}  // namespace compiler
}  // namespace remat
