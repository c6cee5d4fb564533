// The C++ graph builder: layers in PyTorch's vocabulary, emitting checked forward ops.
#ifndef REMAT_COMPILER_BUILDER_H_
#define REMAT_COMPILER_BUILDER_H_

#include <string>
#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Adds tensors and forward ops to a Graph. Every method returns the index of the tensor it
/// produced. Activation names are derived from |name| hints and made unique.
class Builder {
 public:
  /// Builds into |graph|, which must outlive the builder.
  explicit Builder(Graph* graph) : g_(graph) {}

  /// A batch input the caller writes each step.
  int input(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape);
  /// A label (target) the caller writes each step.
  int label(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape);
  /// A trainable parameter initialised as |init| with |scale|.
  int param(const std::string& name, std::vector<int64_t> shape, Init init, float scale);

  /// torch.nn.Linear(in, |out_features|) on the last axis of |x|: creates |prefix|.weight
  /// [out, in] and |prefix|.bias [out] with PyTorch's default uniform initialisation.
  int linear(int x, int64_t out_features, const std::string& prefix);
  /// torch.nn.LayerNorm over the last axis: creates |prefix|.weight (ones) and .bias (zeros).
  int layer_norm(int x, const std::string& prefix, float eps);
  /// Inverted dropout with probability |p|; returns |x| itself when p == 0.
  int dropout(int x, float p, const std::string& name);
  /// Elementwise activations.
  int relu(int x, const std::string& name);
  int gelu(int x, const std::string& name);
  int tanh(int x, const std::string& name);
  int sigmoid(int x, const std::string& name);
  /// Softmax over the last axis.
  int softmax(int x, const std::string& name);
  /// alpha * op(a) @ op(b) in one of the shape modes of plan/matmul_shape.h; |out_shape| is the result's.
  int matmul(int a, int b, bool trans_a, bool trans_b, float alpha, std::vector<int64_t> out_shape,
             const std::string& name);
  /// a + b (same shapes).
  int add(int a, int b, const std::string& name);
  /// x + b broadcast over x's leading dims.
  int bias_add(int x, int b, const std::string& name);
  /// Rows of |table| picked by the i32 tensor |ids|.
  int embedding(int ids, int table, const std::string& name);
  /// |x| viewed as |view_dims| and transposed by |perm|, stored with shape |out_shape|.
  int permute(int x, std::vector<int64_t> view_dims, std::vector<int64_t> perm,
              std::vector<int64_t> out_shape, const std::string& name);
  /// Index |index| of axis |axis| of |x| (the axis is removed).
  int select(int x, int axis, int64_t index, const std::string& name);
  /// Mean softmax cross-entropy of |logits| [N, C] against i32 |labels| [N]; becomes the loss.
  int softmax_cross_entropy(int logits, int labels);
  /// Mean squared error of |pred| against |target|; becomes the loss.
  int mse(int pred, int target);

  /// The graph being built.
  Graph& graph() { return *g_; }

 private:
  int activation(const std::string& hint, std::vector<int64_t> shape,
                 remat_dtype dtype = REMAT_DTYPE_F32);
  int unary(OpCode code, int x, const std::string& name);
  const Tensor& t(int index) const { return g_->tensors[index]; }

  Graph* g_;
};

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_BUILDER_H_
