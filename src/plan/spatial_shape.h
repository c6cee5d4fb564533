// The sizes of the spatial ops (plan/op_catalogue.h, conv to slice): NCHW views, output sizes,
// the convolution's workspace. Worked out once for the verifier, the compiler and every
// backend's kernels, so that they cannot disagree.
#ifndef REMAT_PLAN_SPATIAL_SHAPE_H_
#define REMAT_PLAN_SPATIAL_SHAPE_H_

#include <stdint.h>

#include "plan/op_attrs.h"

namespace remat {

/// The largest stride, pad, dilation or pool kernel a spatial op takes, as a power of two (2^20):
/// their products with dims (at most 2^40) stay far inside int64. The verifier refuses more
/// (plan/op_check_spatial.cc), and the ONNX importer refuses more by the node's name.
constexpr int kMaxSpatialAttrLog2 = 20;
constexpr int64_t kMaxSpatialAttr = int64_t{1} << kMaxSpatialAttrLog2;

/// A tensor of rank 3 ([N, C, L], seen as [N, C, 1, L]) or 4 ([N, C, H, W]) as NCHW.
struct Nchw {
  int64_t n, c, h, w;
  bool valid;  ///< False for another rank.
};

/// The NCHW view of dims |dims| of rank |rank| (|Dim|: int64_t in a plan, TensorDim in a
/// session's tables).
template <typename Dim>
inline Nchw nchw_of(const Dim* dims, int rank) {
  if (rank == 3) return {dims[0], dims[1], 1, dims[2], true};
  if (rank == 4) return {dims[0], dims[1], dims[2], dims[3], true};
  return {0, 0, 0, 0, false};
}

/// Output length of a convolution along one axis: (in + 2 pad - dilation (kernel - 1) - 1) /
/// stride + 1, or a value < 1 when the kernel does not fit. Arguments are positive (pad >= 0)
/// and at most 2^40 (the verifier's bound on every value it passes here), so nothing overflows.
inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                             int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

/// Output length of a pooling window along one axis, as torch's pooling_output_shape: floor or
/// ceil of (in + 2 pad - dilation * (kernel - 1) - 1) / stride, plus 1; in ceil mode, one less
/// when the last window would start in the right padding. < 1 when the window does not fit.
inline int64_t pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                             int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

/// The iattrs of conv, conv_grad_input and conv_grad_weight (attr::conv names them).
struct ConvAttrs {
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
};

/// |iattrs| (7 values) as ConvAttrs. The convolution's gradients name theirs as conv does.
inline ConvAttrs conv_attrs(const int64_t* iattrs) {
  namespace a = attr::conv;
  static_assert(attr::conv_grad_input::groups.index == a::groups.index &&
                    attr::conv_grad_weight::groups.index == a::groups.index,
                "the convolution's gradients take conv's attributes");
  return {iattrs[a::stride_h.index], iattrs[a::stride_w.index],   iattrs[a::pad_h.index],
          iattrs[a::pad_w.index],    iattrs[a::dilation_h.index], iattrs[a::dilation_w.index],
          iattrs[a::groups.index]};
}

/// A convolution's sizes: input x, filters w [K, C/groups, R, S], output [N, K, P, Q].
struct ConvShape {
  Nchw x;
  int64_t k;       ///< Output channels.
  int64_t cg, kg;  ///< Input and output channels per group.
  int64_t r, s;    ///< Filter height (1 for conv1d) and width.
  int64_t p, q;    ///< Output height and width.
  ConvAttrs a;
};

/// The shape of a convolution whose input has dims |x| and filters dims |w| (same rank, 3 or
/// 4), attributes |a| (already checked positive; groups divides C and K).
template <typename Dim>
inline ConvShape conv_shape(const Dim* x, const Dim* w, int rank, const ConvAttrs& a) {
  ConvShape c{};
  c.x = nchw_of(x, rank);
  c.k = w[0];
  c.cg = w[1];
  c.r = rank == 4 ? w[2] : 1;
  c.s = w[rank - 1];
  c.kg = c.k / a.groups;
  c.p = conv_out_size(c.x.h, c.r, a.stride_h, a.pad_h, a.dilation_h);
  c.q = conv_out_size(c.x.w, c.s, a.stride_w, a.pad_w, a.dilation_w);
  c.a = a;
  return c;
}

/// Whether a convolution's input is its own column matrix: a 1x1 filter at stride 1 without
/// padding.
inline bool conv_is_pointwise(const ConvShape& c) {
  return c.r == 1 && c.s == 1 && c.a.stride_h == 1 && c.a.stride_w == 1 && c.a.pad_h == 0 &&
         c.a.pad_w == 0;
}

/// Whether a convolution reads its input directly, without a column matrix: pointwise, or one
/// input channel per group (depthwise and single-channel input: direct loops beat a one-row
/// GEMM).
inline bool conv_is_direct(const ConvShape& c) { return conv_is_pointwise(c) || c.cg == 1; }

/// Elements of the workspace conv_grad_input needs on the CPU: for a strided convolution that
/// is not direct, the gradient of the column matrix of one image and group, [C/groups * R * S,
/// P * Q], which col2im scatters into dx; else 0. conv and conv_grad_weight have none: they
/// pack the column matrix from the image inside the GEMM, and a unit-stride input gradient is a
/// convolution of dy with the flipped filters.
inline int64_t conv_grad_input_workspace_elems(const ConvShape& c) {
  const bool unit_stride = c.a.stride_h == 1 && c.a.stride_w == 1;
  return conv_is_direct(c) || unit_stride ? 0 : c.cg * c.r * c.s * c.p * c.q;
}

/// The iattrs of max_pool and avg_pool (and their gradients; attr::avg_pool names the first
/// seven); count_include_pad is 1 for max_pool, which has no such attribute, and the dilations
/// 1 for avg_pool, which has none.
struct PoolAttrs {
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool ceil_mode, count_include_pad;
};

/// |iattrs| (|num_iattrs| of them) of avg_pool or avg_pool_grad (|average|), or of max_pool or
/// max_pool_grad (7 to 9: a plan may end the list before the dilations, which then are 1).
inline PoolAttrs pool_attrs(const int64_t* iattrs, uint32_t num_iattrs, bool average) {
  namespace a = attr::avg_pool;
  namespace m = attr::max_pool;
  static_assert(m::ceil_mode.index == a::ceil_mode.index &&
                    attr::max_pool_grad::ceil_mode.index == a::ceil_mode.index &&
                    attr::max_pool_grad::dilation_w.index == m::dilation_w.index &&
                    attr::avg_pool_grad::count_include_pad.index == a::count_include_pad.index,
                "the pools take avg_pool's first seven attributes");
  auto at = [&](uint32_t index, int64_t fallback) {
    return index < num_iattrs ? iattrs[index] : fallback;
  };
  return {iattrs[a::kernel_h.index],
          iattrs[a::kernel_w.index],
          iattrs[a::stride_h.index],
          iattrs[a::stride_w.index],
          iattrs[a::pad_h.index],
          iattrs[a::pad_w.index],
          average ? 1 : at(m::dilation_h.index, m::dilation_h.fallback),
          average ? 1 : at(m::dilation_w.index, m::dilation_w.fallback),
          iattrs[a::ceil_mode.index] != 0,
          average ? at(a::count_include_pad.index, a::count_include_pad.fallback) != 0
                  : a::count_include_pad.fallback != 0};
}

/// One pooling window along one axis: its elements start, start + step, ... below end, clipped
/// to the input, and the divisor avg_pool uses for it (the window clipped to the padded input,
/// or to the input; step 1).
struct PoolWindow {
  int64_t start, end, padded_len, step;
};

/// Window |o| along an axis of length |in|, as torch's avg_pool2d and max_pool2d compute it:
/// |kernel| elements |dilation| apart.
inline PoolWindow pool_window(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                              int64_t dilation) {
  int64_t start = o * stride - pad;
  int64_t end = start + dilation * (kernel - 1) + 1;
  if (end > in + pad) end = in + pad;
  const int64_t padded_len = end - start;
  // The first element inside the input (padding never counts).
  if (start < 0) start += (-start + dilation - 1) / dilation * dilation;
  if (end > in) end = in;
  return {start, end, padded_len, dilation};
}

/// The axis of concat and slice, and the [outer, n, inner] view of a tensor around it.
struct AxisView {
  int64_t outer, n, inner;
};

/// Dims |dims| of rank |rank| seen around axis |axis| (0 <= axis < rank).
template <typename Dim>
inline AxisView axis_view(const Dim* dims, int rank, int64_t axis) {
  AxisView v{1, dims[axis], 1};
  for (int64_t k = 0; k < axis; ++k) v.outer *= dims[k];
  for (int64_t k = axis + 1; k < rank; ++k) v.inner *= dims[k];
  return v;
}

}  // namespace remat

#endif  // REMAT_PLAN_SPATIAL_SHAPE_H_
