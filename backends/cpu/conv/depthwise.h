// Convolution geometry the CPU's convolution kernels share, and the direct loops of a
// convolution with one input channel per group (depthwise, or a single-channel input), which
// beat a one-row GEMM.
#ifndef REMAT_BACKENDS_CPU_CONV_DEPTHWISE_H_
#define REMAT_BACKENDS_CPU_CONV_DEPTHWISE_H_

#include <stdint.h>

#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {

/// Input row of output row |p| and filter row |r| (may lie in the padding).
inline int64_t in_row(const ConvShape& c, int64_t p, int64_t r) {
  return p * c.a.stride_h - c.a.pad_h + r * c.a.dilation_h;
}
/// Input column of output column |q| and filter column |s| (may lie in the padding).
inline int64_t in_col(const ConvShape& c, int64_t q, int64_t s) {
  return q * c.a.stride_w - c.a.pad_w + s * c.a.dilation_w;
}

/// One input channel per group and a filter wider than 1x1 at unit stride: direct loops (the
/// rest of conv_is_direct, a pointwise product, multiplies the input in place instead).
inline bool uses_depthwise_loops(const ConvShape& c) { return c.cg == 1 && !conv_is_pointwise(c); }

/// Depthwise forward for output channels [k0, k1): y[n, k] = sum over (r, s) of w[k, 0, r, s] *
/// x[n, k / kg] shifted.
void depthwise_forward(const ConvShape& c, const float* x, const float* w, int64_t k0, int64_t k1,
                       float* y);

/// Depthwise input gradient for input channels [c0, c1): dx[n, ci] += w[k, 0, r, s] * dy[n, k]
/// at every tap of ci's kg output channels k, in output order; those planes are zeroed first.
void depthwise_grad_input(const ConvShape& c, const float* dy, const float* w, int64_t c0,
                          int64_t c1, float* dx);

/// Depthwise weight gradient for output channels [k0, k1): one double (Accum, isa/lane_sum.h)
/// accumulator per filter tap, images and positions in order.
void depthwise_grad_weight(const ConvShape& c, const float* dy, const float* x, int64_t k0,
                           int64_t k1, float* dw);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_DEPTHWISE_H_
