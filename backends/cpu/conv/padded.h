// Zero-padded copies of a convolution's input, which the unit-stride kernels read their taps
// from in place (ops/conv.cc, conv/weight_span.cc).
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

/// A convolution whose op(B) the GEMM reads from whole zero-padded images, several at a time
/// (GemmImages), computing only the output positions. At stride (sh, sw) each channel's padded
/// image is split into sh * sw phases, phase (a, b) holding its rows a, a + sh, ... and columns
/// b, b + sw, ...: every tap then reads one phase at a fixed offset from the output position, and
/// an output row's positions are contiguous in it. A phase is [hp, wp] = [P + (R - 1) *
/// dilation_h / sh, Q + (S - 1) * dilation_w / sw] (at unit stride, the padded image), a
/// channel's copy its phases in order, and an image's copy its group's channels.
struct PaddedImages {
  int64_t hp, wp;     ///< a phase's rows and columns
  int64_t channel;    ///< floats of a channel's copy: sh * sw * hp * wp
  int64_t taps;       ///< int64 tap offsets (C/groups * R * S) at the start of the scratch
  int64_t copies_at;  ///< float offset in the scratch of the first image's copy, after them
  int64_t images;     ///< images per GEMM; 0: not this way (Q not a multiple of
                      ///< kGemmImageGrain, or one image does not fit)
};

/// The padded images of |c| in |scratch_floats| floats of scratch.
PaddedImages padded_images(const ConvShape& c, int64_t scratch_floats);

/// Writes the offset of each tap (ci, r, s) of the group from an image's copy, for output (0,
/// 0), to |out| (pi.taps entries).
void fill_tap_offsets(const ConvShape& c, const PaddedImages& pi, int64_t* out);

/// Copies one channel's |plane| [H, W] as its padded phases to |out| (pi.channel floats); phases
/// no tap reads are left as they were.
void copy_phases(const ConvShape& c, const PaddedImages& pi, const float* plane, float* out);

/// Copies padded positions [first, first + len) of one channel's |plane| [H, W], padded to rows
/// of |wp|, to |out|; positions in the padding or past the padded image are 0.
void copy_padded_channel(const ConvShape& c, int64_t wp, const float* plane, int64_t first,
                         int64_t len, float* out);

/// Copies padded positions [first, first + len) of the group's channels of |x_g| into |dst|,
/// channel ci at dst + ci * len.
void copy_padded(const ConvShape& c, int64_t wp, const float* x_g, int64_t first, int64_t len,
                 float* dst);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CONV_PADDED_H_
