// A convolution's weight gradient as dot products (dot_gemm) of dy's rows with the tap rows of
// the images' zero-padded planes, by output position or (unit stride) laid end to end, neither
// operand packed.
#ifndef REMAT_BACKENDS_CPU_CONV_WEIGHT_SPAN_H_
#define REMAT_BACKENDS_CPU_CONV_WEIGHT_SPAN_H_

#include "backends/cpu/kernels.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {

/// Computes dw [K, C/groups, R, S] of |c| from dy [N, K, P, Q] and x [N, C, H, W] on the
/// backend's threads, each owning whole input channels, over whole padded images (split into
/// phases at other strides, conv/padded.h) and only their output positions (dot_gemm's images
/// mode), dy read in place, and returns true; returns false and writes nothing where Q is not a
/// multiple of kGemmImageGrain, P * Q is not one of kGemmDotLanes, or the group's padded
/// channels of one image do not fit a thread's scratch. The bits do not depend on the thread
/// count.
bool conv_grad_weight_over_images(const KernelArgs& args, const ConvShape& c, const float* dy,
                                  const float* x, float* dw);

/// Computes dw [K, C/groups, R, S] of |c| from dy [N, K, P, Q] and x [N, C, H, W] on the
/// backend's threads, each owning whole input channels, and returns true; returns false and
/// writes nothing where |c| is strided or not even a chunk of 16 positions fits a thread's
/// scratch. The bits do not depend on the thread count.
bool conv_grad_weight_over_image_span(const KernelArgs& args, const ConvShape& c, const float* dy,
                                      const float* x, float* dw);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_WEIGHT_SPAN_H_
