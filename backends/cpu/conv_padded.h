// Zero-padded copies of a convolution's input, which the unit-stride kernels read their taps
// from in place (kernels_conv.cc, conv_weight_span.cc).
#ifndef REMAT_BACKENDS_CPU_CONV_PADDED_H_
#define REMAT_BACKENDS_CPU_CONV_PADDED_H_

#include <stdint.h>

#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {

/// Columns of a thread's slice of a convolution's product: a whole AVX-512 micro-tile.
constexpr int64_t kColumnGrain = 32;

/// A stride-1 convolution as a product whose op(B) the GEMM reads in place (GemmRowWalk) from a
/// zero-padded copy of the image, [cg, Hp, Wp] with Hp = H + 2 pad_h and Wp = W + 2 pad_w (a
/// negative pad crops). Output (p, q) is column p * Wp + q of the product, its "span" columns
/// running to (P - 1) * Wp + Q: tap (ci, r, s) of every column lies at the same offset from it,
/// ci * Hp * Wp + r * dilation_h * Wp + s * dilation_w. Columns with q >= Q are computed and
/// dropped, (Wp - Q) / Wp of the work, where im2col copies every tap of every position.
struct PaddedSpan {
  int64_t wp;     ///< padded width
  int64_t span;   ///< columns of the product
  int64_t reach;  ///< padded positions past a column that its taps read
  int64_t chunk;  ///< columns a thread computes at a time in its scratch; 0: does not fit
};

/// The padded span of |c|; chunk is 0 at other strides or where the padded copy does not fit
/// the scratch beside the packed engine's op(A).
PaddedSpan padded_span(const ConvShape& c);

/// A stride-1 convolution whose op(B) the GEMM reads from whole zero-padded images, several at
/// a time (GemmImages), computing only the output positions: each image's group channels are
/// copied as [cg, Hp, Wp] planes, and |images| of them fit the scratch beside the packed
/// engine's op(A).
struct PaddedImages {
  int64_t hp, wp;  ///< padded height and width
  int64_t images;  ///< images per GEMM; 0: not this way (another stride, Q not a multiple of
                   ///< kGemmImageGrain, or one image does not fit)
};

/// The padded images of |c|.
PaddedImages padded_images(const ConvShape& c);

/// Copies padded positions [first, first + len) of one channel's |plane| [H, W], padded to rows
/// of |wp|, to |out|; positions in the padding or past the padded image are 0.
void copy_padded_channel(const ConvShape& c, int64_t wp, const float* plane, int64_t first, int64_t len, float* out);

/// Copies padded positions [first, first + len) of the group's channels of |x_g| into |dst|,
/// channel ci at dst + ci * len.
void copy_padded(const ConvShape& c, int64_t wp, const float* x_g, int64_t first, int64_t len, float* dst);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_PADDED_H_
