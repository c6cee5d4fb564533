// Float64 references of the spatial ops (conv to slice in plan/op_catalogue.h), written from the
// catalogue's contract and PyTorch's documented semantics (conv2d/conv1d, max_pool2d, avg_pool2d,
// batch_norm, F.pad, torch.cat, narrow), independently of the kernels and of
// plan/spatial_shape.h; plus the problem tables the forward and gradient tests share.
#ifndef REMAT_TESTS_OPS_OP_REFERENCE_SPATIAL_H_
#define REMAT_TESTS_OPS_OP_REFERENCE_SPATIAL_H_

#include <stdint.h>

#include <vector>

#include "op_reference.h"

namespace ops_test {

using Dims = std::vector<int64_t>;

/// One convolution: x [n, c, h, w] (rank 3: [n, c, w], h == 1), w [k, c/groups, r, s] (rank 3:
/// [k, c/groups, s], r == 1), y [n, k, p, q].
struct ConvProblem {
  const char* name;
  bool rank3;
  int64_t n, c, h, w, k, r, s;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;

  int64_t p() const;  ///< Output height, as torch's conv2d documents it.
  int64_t q() const;  ///< Output width.
  Dims x_dims() const;
  Dims w_dims() const;
  Dims y_dims() const;
  std::vector<int64_t> iattrs() const;  ///< The catalogue's 7 iattrs, in order.
  /// The workspace the catalogue asks of conv_grad_input: (c/groups) * r * s * p * q at a stride
  /// other than 1, unless one input channel per group; else 0.
  int64_t grad_input_workspace() const;
};

/// The attribute combinations every conv test covers: stride and padding, dilation, groups,
/// depthwise with a channel multiplier, 1x1 with and without a workspace, conv1d, and a
/// rectangular filter with different attributes per axis.
const std::vector<ConvProblem>& conv_problems();

/// y of conv; |bias| empty for none.
Vec ref_conv(const ConvProblem& cp, const Vec& x, const Vec& w, const Vec& bias);

/// dx and dw of L = sum(g * conv(x, w)) by the definition's loops: every product of ref_conv
/// adds g * w to dx and g * x to dw. Exact for a linear op, and cheap where finite differences
/// of large problems are not.
void ref_conv_adjoint(const ConvProblem& cp, const Vec& x, const Vec& w, const Vec& g, Vec* dx,
                      Vec* dw);

/// One pooling problem: x [n, c, h, w] (rank 3: [n, c, w], h == 1); dilations for max pooling.
struct PoolProblem {
  const char* name;
  bool rank3;
  int64_t n, c, h, w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  bool ceil_mode, count_include_pad;
  int64_t dilation_h = 1, dilation_w = 1;

  int64_t p() const;  ///< Output height, as torch's pooling_output_shape.
  int64_t q() const;
  Dims x_dims() const;
  Dims y_dims() const;
  /// The iattrs of max_pool (7, as plans before the dilations were written, or 9 with them
  /// where a dilation is not 1), or the 8 of avg_pool when |with_count_include_pad|.
  std::vector<int64_t> iattrs(bool with_count_include_pad) const;
};

/// Output length along one axis, torch's pooling_output_shape.
int64_t ref_pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
                          int64_t dilation = 1);

/// Pool shapes (ceil_mode and count_include_pad false; the tests set them): some where ceil
/// mode adds a window, one where it would start in the padding and does not.
const std::vector<PoolProblem>& pool_problems();

/// pool_problems() and dilated windows (max pooling's), some straddling the padding.
const std::vector<PoolProblem>& max_pool_problems();

/// max_pool2d: padding never wins, a NaN wins over any number; a window with no element inside
/// the input gives -inf.
Vec ref_max_pool(const PoolProblem& pp, const Vec& x);
Vec ref_avg_pool(const PoolProblem& pp, const Vec& x);

/// y[n, c] = mean of x[n, c, :] over |spatial| values.
Vec ref_global_avg_pool(const Vec& x, int64_t n, int64_t c, int64_t spatial);

/// Batch norm in training over x [n, c, spatial]: biased batch variance.
void ref_batch_norm(const Vec& x, const Vec& gamma, const Vec& beta, int64_t n, int64_t c,
                    int64_t spatial, double eps, Vec* y, Vec* mean, Vec* var);
Vec ref_batch_norm_inference(const Vec& x, const Vec& gamma, const Vec& beta, const Vec& mean,
                             const Vec& var, int64_t n, int64_t c, int64_t spatial, double eps);

/// F.pad(x, (left, right, top, bottom), value) of x [n, c, h, w].
Vec ref_pad(const Vec& x, int64_t n, int64_t c, int64_t h, int64_t w, int64_t top, int64_t bottom,
            int64_t left, int64_t right, double value);

/// torch.cat(parts, axis); every part has |dims[i]|.
Vec ref_concat(const std::vector<Vec>& parts, const std::vector<Dims>& dims, int64_t axis);
/// x.narrow(axis, offset, length) of x with |dims|.
Vec ref_slice(const Vec& x, const Dims& dims, int64_t axis, int64_t offset, int64_t length);

}  // namespace ops_test

#endif  // REMAT_TESTS_OPS_OP_REFERENCE_SPATIAL_H_
