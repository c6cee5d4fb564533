// The conv kernels' Winograd paths: which convolutions run as Winograd's F(2x2, 3x3)
// (conv/winograd.h), and those convolutions and their gradients on the backend's threads.
#ifndef REMAT_BACKENDS_CPU_CONV_WINOGRAD_PATHS_H_
#define REMAT_BACKENDS_CPU_CONV_WINOGRAD_PATHS_H_

#include "backends/cpu/kernels.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {

/// Computes convolution |c| of x into y by Winograd's F(2x2, 3x3) and returns true where it
/// applies: a 3x3 filter at unit stride and dilation, one group, 32 channels or more in and out,
/// and transformed filters and blocks that fit the scratch (microcontroller builds have no room
/// for them); else returns false and writes nothing. |flipped|: w holds the filters of the
/// convolution whose input gradient |c| is, [C, K, 3, 3] for c's K = C (flipped_conv), read
/// turned 180 degrees with their channel axes swapped. The bits do not depend on the thread
/// count.
bool winograd_conv(const KernelArgs& args, const ConvShape& c, const float* x, const float* w,
                   bool flipped, float* y);

/// Computes dw [K, C, 3, 3] of |c| from dy [N, K, P, Q] and x [N, C, H, W] by Winograd's
/// F(2x2, 3x3) and returns true where winograd_conv applies to |c| and at least two parts of
/// the sum over the tiles fit the shared scratch (winograd_weight_parts); else returns false
/// and writes nothing. The bits do not depend on the thread count.
bool winograd_conv_grad_weight(const KernelArgs& args, const ConvShape& c, const float* dy,
                               const float* x, float* dw);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_WINOGRAD_PATHS_H_
