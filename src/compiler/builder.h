// The C++ graph builder: layers in PyTorch's vocabulary, emitting checked forward ops.
#ifndef REMAT_COMPILER_BUILDER_H_
#define REMAT_COMPILER_BUILDER_H_

#include <string>
#include <vector>

#include "compiler/attention_kernel.h"
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
  /// LayerNorm over the last axis with |gamma| and |beta| [H] that exist already (an imported
  /// model's); outputs named |prefix|.out, .mean and .rstd.
  int layer_norm_with(int x, int gamma, int beta, const std::string& prefix, float eps);
  /// Inverted dropout with probability |p|; returns |x| itself when p == 0.
  int dropout(int x, float p, const std::string& name);
  /// Elementwise activations.
  int relu(int x, const std::string& name);
  int gelu(int x, const std::string& name);
  int tanh(int x, const std::string& name);
  int sigmoid(int x, const std::string& name);
  /// Softmax over the last axis.
  int softmax(int x, const std::string& name);
  /// log_softmax over the last axis.
  int log_softmax(int x, const std::string& name);
  /// torch.pow(x, exponent) for a number |exponent|.
  int pow_scalar(int x, float exponent, const std::string& name);
  /// torch.sqrt.
  int square_root(int x, const std::string& name);
  /// F.leaky_relu(x, alpha).
  int leaky_relu(int x, float alpha, const std::string& name);
  /// torch.clamp(x, low, high) (F.hardtanh; F.relu6 is low 0, high 6).
  int clip(int x, float low, float high, const std::string& name);
  /// clamp(alpha * x + beta, 0, 1): F.hardsigmoid is alpha 1/6, beta 0.5.
  int hard_sigmoid(int x, float alpha, float beta, const std::string& name);
  /// torch.erf.
  int error_function(int x, const std::string& name);
  /// The sum (|mean|: the mean) of |x| over its |count| consecutive axes from |axis|; the result
  /// has |out_shape| (x's dims without those axes, or with them as 1s: keepdim).
  int reduce_sum(int x, int64_t axis, int64_t count, bool mean, std::vector<int64_t> out_shape,
                 const std::string& name);
  /// |x| repeated to |out_shape| along its |count| consecutive axes from |axis|, which |x| lacks
  /// or has as 1s (torch's expand).
  int broadcast(int x, int64_t axis, int64_t count, std::vector<int64_t> out_shape,
                const std::string& name);
  /// alpha * op(a) @ op(b) in one of the shape modes of plan/matmul_shape.h; |out_shape| is the
  /// result's. With |bias| (a tensor [N]; not in reduce mode), matmul's epilogue adds it to every
  /// row: the bits of bias_add after the product, without the product's own tensor.
  int matmul(int a, int b, bool trans_a, bool trans_b, float alpha, std::vector<int64_t> out_shape,
             const std::string& name, int bias = -1);
  /// a + b (same shapes).
  int add(int a, int b, const std::string& name);
  /// x + b broadcast over x's leading dims.
  int bias_add(int x, int b, const std::string& name);
  /// Attention's per-head products, alpha * op(a) @ op(b) for each of |heads| heads
  /// (plan/head_matmul_shape.h): the tensors whose bit (kHeadsOfA, kHeadsOfB, kHeadsOfC) is set in
  /// |interleaved| hold their heads interleaved ([..., S, heads * D], a linear layer's output, no
  /// permute).
  int head_matmul(int a, int b, bool trans_a, bool trans_b, float alpha, int64_t heads,
                  int64_t interleaved, std::vector<int64_t> out_shape, const std::string& name);
  /// Scaled dot-product attention of |heads| heads over q [B, Sq, heads * D], k [B, Sk, heads *
  /// D] and v [B, Sk, heads * Dv] (heads interleaved), with an optional additive |mask| ([Sq,
  /// Sk] or [B, Sq, Sk]; -1 for none) and dropout |p| on the probabilities; returns the context
  /// [B, Sq, heads * Dv]. As one attention op (|kernel| kFused: the probabilities are never
  /// stored) or as head_matmul, [add,] softmax, dropout, head_matmul (kUnfused), the same
  /// dropout masks either way. Tensors are named |prefix|.scores, .probs, .context, ...
  int attention(int q, int k, int v, int mask, int64_t heads, float scale, float p,
                AttentionKernel kernel, const std::string& prefix);
  /// Rows of |table| picked by the i32 tensor |ids|.
  int embedding(int ids, int table, const std::string& name);
  /// |x| viewed as |view_dims| and transposed by |perm|, stored with shape |out_shape|.
  int permute(int x, std::vector<int64_t> view_dims, std::vector<int64_t> perm,
              std::vector<int64_t> out_shape, const std::string& name);
  /// Index |index| of axis |axis| of |x| (the axis is removed).
  int select(int x, int axis, int64_t index, const std::string& name);
  // ---- Convolutional layers (builder_spatial.cc): NCHW tensors, rank 4 (2-d) or 3 (1-d).

  /// Sizes of a convolution: filter, stride, padding and dilation as (height, width); 1-d
  /// convolutions (rank-3 |x|) use the width entries and leave the height at (1, 1, 0, 1).
  struct ConvSpec {
    int64_t out_channels;
    int64_t kernel_h = 1, kernel_w = 1;
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_h = 0, pad_w = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    bool bias = true;
  };
  /// torch.nn.Conv2d (Conv1d for rank-3 |x|): |prefix|.weight [K, C/groups, R, S] and, when
  /// |spec|.bias, |prefix|.bias [K], with PyTorch's default uniform initialisation
  /// (bound 1/sqrt(C/groups * R * S)); adds the im2col workspace the CPU needs.
  int conv(int x, const ConvSpec& spec, const std::string& prefix);
  /// A convolution with filters |w| [K, C/groups, R, S] (or [K, C/groups, S] on rank 3) and
  /// bias |bias| [K] (-1: none) that exist already (an imported model's); |spec|'s
  /// out_channels, kernel and bias are read from them. Output |prefix|.out.
  int conv_with(int x, int w, int bias, const ConvSpec& spec, const std::string& prefix);
  /// torch.nn.BatchNorm2d / BatchNorm1d in training mode over dim 1 of |x|: |prefix|.weight
  /// (ones), .bias (zeros) and the buffers .running_mean (zeros), .running_var (ones) and
  /// .num_batches_tracked, which the step updates after its backward pass.
  int batch_norm(int x, const std::string& prefix, float eps = 1e-5f, float momentum = 0.1f);
  /// Batch norm with |gamma|, |beta| (params) and |running_mean|, |running_var| (state) [C]
  /// that exist already (an imported model's); adds |prefix|.num_batches_tracked.
  int batch_norm_with(int x, int gamma, int beta, int running_mean, int running_var,
                      const std::string& prefix, float eps, float momentum);
  /// A pooling window: its size, stride and padding (on both sides) along H and W. On a rank-3
  /// [N, C, L] input it pools along L with the W values (the H ones must be 1, 1 and 0).
  struct PoolWindow2d {
    int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    /// Elements of a window this far apart (max pooling only: average pooling takes 1).
    int64_t dilation_h = 1, dilation_w = 1;
    /// The same size, stride and padding along both axes (H ones of 1, 1, 0 on rank 3).
    static PoolWindow2d square(int64_t kernel, int64_t stride, int64_t pad) {
      return {kernel, kernel, stride, stride, pad, pad};
    }
  };
  /// torch.nn.MaxPool2d(kernel, stride, padding, ceil_mode) (MaxPool1d on rank 3).
  int max_pool(int x, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
               const std::string& name);
  /// The same over |window|, which may differ along H and W and be dilated.
  int max_pool(int x, const PoolWindow2d& window, bool ceil_mode, const std::string& name);
  /// torch.nn.AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad) over |window|.
  int avg_pool(int x, const PoolWindow2d& window, bool ceil_mode, bool count_include_pad,
               const std::string& name);
  /// torch.nn.AdaptiveAvgPool2d(1) then flatten: [N, C, ...] -> [N, C].
  int global_avg_pool(int x, const std::string& name);
  /// torch.flatten(x, 1): [N, ...] -> [N, rest] (a copy).
  int flatten(int x, const std::string& name);
  /// F.pad of the spatial dims with |value|.
  int pad(int x, int64_t top, int64_t bottom, int64_t left, int64_t right, float value,
          const std::string& name);
  /// torch.cat(|parts|, |axis|), 2 to 5 tensors.
  int concat(const std::vector<int>& parts, int64_t axis, const std::string& name);

  /// Mean softmax cross-entropy of |logits| [N, C] against i32 |labels| [N]; becomes the loss.
  int softmax_cross_entropy(int logits, int labels);
  /// Mean squared error of |pred| against |target|; becomes the loss.
  int mse(int pred, int target);

  /// The graph being built.
  Graph& graph() { return *g_; }

 private:
  int activation(const std::string& hint, std::vector<int64_t> shape,
                 remat_dtype dtype = REMAT_DTYPE_F32);
  int unary(OpCode code, int x, const std::string& name, std::vector<float> fattrs = {});
  int avg_or_max_pool(OpCode code, int x, const PoolWindow2d& window, bool ceil_mode,
                      bool count_include_pad, const std::string& name);
  const Tensor& t(int index) const { return g_->tensors[index]; }

  Graph* g_;
};

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_BUILDER_H_
