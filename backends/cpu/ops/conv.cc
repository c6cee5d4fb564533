// Convolutions (conv, conv_grad_input, conv_grad_weight) and the conv bias's gradient
// (channel_sum), one image and group at a time with the packed GEMM. Where Q is a multiple of
// kGemmImageGrain, the forward pass reads its taps in place from whole zero-padded images (split
// into phases when strided), several images a product, computing only the output positions
// (image_conv, conv/padded.h); else, at unit stride, from the padded image's span of columns
// (padded_conv), and otherwise the column matrix (im2col) is packed straight from the image into
// the GEMM's panels, so it is never stored either. A unit-stride input gradient is the
// convolution of dy with the flipped filters, and only a strided one computes the column
// matrix's gradient into the op's workspace and scatters it (col2im). The weight gradient is a
// dot product of dy's rows with the padded images' tap rows where it can be
// (conv/weight_span.h), else the column matrix is packed transposed. 1x1 unit-stride unpadded
// convolutions multiply the input in place, and one input channel per group (depthwise) runs as
// direct loops (conv/depthwise.h; plan/spatial_shape.h decides which, for the verifier too).
// A 3x3 unit-stride convolution of one group with 32 channels or more in and out, and both its
// gradients, run as Winograd's F(2x2, 3x3) instead (conv/winograd_paths.h).
//
// Threads own disjoint slices (backends/cpu/parallel.h): the forward pass and the unit-stride
// input gradient cut the images, or the output positions (columns of the product; span columns
// when padded) when there are fewer images than threads; the strided input gradient the input
// channels (rows of the workspace, which col2im scatters into disjoint planes); the weight
// gradient the filter taps (columns of dw; whole input channels over padded images); Winograd's
// filter transforms the output channels, its tiles contiguous runs of tiles, and its weight
// gradient's sums a fixed number of parts of the tiles (added in order, per output channel).
// Each thread loops over every image it needs, so a slice sums nothing that another thread sums
// too.
#include <string.h>

#include "backends/cpu/conv/depthwise.h"
#include "backends/cpu/conv/padded.h"
#include "backends/cpu/conv/weight_span.h"
#include "backends/cpu/conv/winograd_paths.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/isa/lane_sum.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {
namespace {

// A build for small flash (REMAT_SMALL_FLASH: firmware) runs every convolution that is not
// depthwise through the column-matrix paths alone: the padded-image paths (conv/padded.h,
// conv/weight_span.h and the dot-product engine they use) suit a host's caches and threads, and
// take 11 KB of a microcontroller's flash. Each path sums every output in a fixed order, so
// recomputation stays byte-exact in either build; the two builds' bits may differ.
#if defined(REMAT_SMALL_FLASH)
constexpr bool kPaddedPaths = false;
#else
constexpr bool kPaddedPaths = true;
#endif

// The convolution of |call| with input dims |x| and filter dims |w|.
ConvShape shape_of(const OpCall& call, const TensorRef& x, const TensorRef& w) {
  return conv_shape(x.dims, w.dims, x.rank, conv_attrs(call.iattrs));
}

// The output columns [lo, hi) whose input column for filter column |s| lies inside the image.
struct ColumnRange {
  int64_t lo, hi;
};
ColumnRange valid_columns(const ConvShape& c, int64_t s) {
  const int64_t offset = s * c.a.dilation_w - c.a.pad_w, stride = c.a.stride_w;
  int64_t lo, hi;
  if (stride == 1) {  // no division: the packers ask this once per filter tap
    lo = offset >= 0 ? 0 : -offset;
    hi = c.x.w - offset;
  } else {
    lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    hi = c.x.w - offset <= 0 ? 0 : (c.x.w - offset + stride - 1) / stride;
  }
  if (hi > c.q) hi = c.q;
  if (hi < 0) hi = 0;
  if (lo > hi) lo = hi;
  return {lo, hi};
}

// Filter tap j = (ci * R + r) * S + s of a column matrix, stepped without dividing.
struct Tap {
  int64_t j, ci, r, s;
  void step(const ConvShape& c) {
    ++j;
    if (++s < c.s) return;
    s = 0;
    if (++r < c.r) return;
    r = 0;
    ++ci;
  }
};
Tap tap_at(const ConvShape& c, int64_t j) {
  return {j, j / (c.r * c.s), j % (c.r * c.s) / c.s, j % c.s};
}

// Copies element (j, i) of one image's column matrix, x_g[ci, in_row, in_col] for tap j = (ci *
// R + r) * S + s and position i = p * Q + q, to out[(j - j0) * tap_stride + (i - i0) *
// position_stride], for taps [j0, j1) and positions [i0, i1), where the input lies inside the
// image; the caller has zeroed |out|, so the padding stays 0. |x_g| is the first of the group's
// cg channels of the image. kUnitPositionStride: position_stride is 1.
template <bool kUnitPositionStride>
void im2col_valid(const ConvShape& c, const float* x_g, int64_t j0, int64_t j1, int64_t i0,
                  int64_t i1, float* out, int64_t tap_stride, int64_t position_stride) {
  const int64_t ps = kUnitPositionStride ? 1 : position_stride;
  const int64_t p_first = i0 / c.q;
  for (Tap t = tap_at(c, j0); t.j < j1; t.step(c)) {
    const float* plane = x_g + t.ci * c.x.h * c.x.w;
    const ColumnRange valid = valid_columns(c, t.s);
    const int64_t offset = t.s * c.a.dilation_w - c.a.pad_w;
    float* row = out + (t.j - j0) * tap_stride;
    for (int64_t p = p_first; p * c.q < i1; ++p) {
      const int64_t ih = in_row(c, p, t.r);
      if (ih < 0 || ih >= c.x.h) continue;
      // This output row's part of [i0, i1) inside the image, as columns q in [lo, hi); column
      // q's slot is row[(base + q) * ps].
      const int64_t qa = i0 > p * c.q ? i0 - p * c.q : 0;
      const int64_t qb = i1 < (p + 1) * c.q ? i1 - p * c.q : c.q;
      const int64_t lo = valid.lo > qa ? valid.lo : qa, hi = valid.hi < qb ? valid.hi : qb;
      const int64_t base = p * c.q - i0;
      const float* line = plane + ih * c.x.w + offset;  // line[q * stride] is column q's input
      if (c.a.stride_w == 1) {
        for (int64_t q = lo; q < hi; ++q) row[(base + q) * ps] = line[q];
      } else {
        for (int64_t q = lo; q < hi; ++q) row[(base + q) * ps] = line[q * c.a.stride_w];
      }
    }
  }
}

// One image and group's column matrix, [cg * R * S taps, P * Q positions], which the packed
// GEMM packs straight from the image (GemmPacker) instead of reading a stored copy: the
// convolution's im2col fused into the GEMM's packing, so the matrix never goes to memory.
// |first| is the position (forward) or tap (weight gradient) of the thread's slice that the
// GEMM calls its column 0.
struct ImplicitColumns {
  const ConvShape* c;
  const float* x_g;
  int64_t first;
};

// Zeroes the |kc| x |xc| block's panels, tails included: one memset, after which the packers
// write only what lies inside the image (a call per short run of padding costs more than the run).
void zero_panels(int64_t kc, int64_t xc, int64_t panel, float* dst) {
  memset(dst, 0, static_cast<size_t>(kc * ((xc + panel - 1) / panel * panel)) * sizeof(float));
}

// GemmPacker for op(B) = the column matrix (K = taps, N = positions): the forward product.
void pack_columns(const void* context, int64_t k0, int64_t kc, int64_t x0, int64_t xc,
                  int64_t panel, float* dst) {
  const ImplicitColumns& m = *static_cast<const ImplicitColumns*>(context);
  zero_panels(kc, xc, panel, dst);
  for (int64_t xb = 0; xb < xc; xb += panel, dst += kc * panel) {
    const int64_t filled = xc - xb < panel ? xc - xb : panel, i0 = m.first + x0 + xb;
    im2col_valid<true>(*m.c, m.x_g, k0, k0 + kc, i0, i0 + filled, dst, panel, 1);
  }
}

// GemmPacker for op(B) = the column matrix transposed (K = positions, N = taps): the weight
// gradient's product.
void pack_columns_transposed(const void* context, int64_t k0, int64_t kc, int64_t x0, int64_t xc,
                             int64_t panel, float* dst) {
  const ImplicitColumns& m = *static_cast<const ImplicitColumns*>(context);
  zero_panels(kc, xc, panel, dst);
  for (int64_t xb = 0; xb < xc; xb += panel, dst += kc * panel) {
    const int64_t filled = xc - xb < panel ? xc - xb : panel, j0 = m.first + x0 + xb;
    im2col_valid<false>(*m.c, m.x_g, j0, j0 + filled, k0, k0 + kc, dst, 1, panel);
  }
}

// A stride-1 convolution's input gradient is itself a convolution: of dy, padded by
// dilation * (R - 1) - pad, with each filter turned 180 degrees and its channel axes swapped.
// Its filters w'[ci, k, r, s] = w[k, ci, R-1-r, S-1-s] of one group, [cg rows, kg * R * S
// taps], which the packed GEMM packs straight from w (GemmPacker for op(A)).
struct FlippedFilters {
  const ConvShape* c;  // the original convolution
  const float* w_g;    // its group's first filter
};

void pack_flipped_filters(const void* context, int64_t k0, int64_t kc, int64_t x0, int64_t xc,
                          int64_t panel, float* dst) {
  const FlippedFilters& filters = *static_cast<const FlippedFilters*>(context);
  const ConvShape& c = *filters.c;
  const int64_t rs = c.r * c.s;
  for (int64_t xb = 0; xb < xc; xb += panel, dst += kc * panel) {
    const int64_t filled = xc - xb < panel ? xc - xb : panel;
    if (filled < panel) zero_panels(kc, panel, panel, dst);
    // Tap k0 + t is filter k's flipped tap rs - 1 - tap, stepped without dividing.
    int64_t k = k0 / rs, tap = k0 % rs;
    for (int64_t t = 0; t < kc; ++t) {
      const float* src = filters.w_g + k * c.cg * rs + (rs - 1 - tap) + (x0 + xb) * rs;
      for (int64_t i = 0; i < filled; ++i) dst[t * panel + i] = src[i * rs];
      if (++tap == rs) tap = 0, ++k;
    }
  }
}

// The convolution whose output is the input gradient of |c| at unit stride, where every input
// position is reached by every tap the same way: input dy [N, K, P, Q], filters [C, K/groups,
// R, S].
ConvShape flipped_conv(const ConvShape& c) {
  ConvShape f = c;
  f.x = {c.x.n, c.k, c.p, c.q, true};
  f.k = c.x.c;
  f.cg = c.kg;
  f.kg = c.cg;
  f.p = c.x.h;
  f.q = c.x.w;
  f.a.pad_h = c.a.dilation_h * (c.r - 1) - c.a.pad_h;
  f.a.pad_w = c.a.dilation_w * (c.s - 1) - c.a.pad_w;
  return f;
}

// The adjoint of im2col for the group's channels [c0, c1): dx_g[ci, in_row, in_col] +=
// col[...], in im2col's order (taps, then positions); those planes are zeroed first.
void col2im(const ConvShape& c, const float* col, int64_t c0, int64_t c1, float* dx_g) {
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w;
  memset(dx_g + c0 * hw, 0, static_cast<size_t>((c1 - c0) * hw) * sizeof(float));
  for (int64_t ci = c0; ci < c1; ++ci) {
    float* plane = dx_g + ci * hw;
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        const float* row = col + ((ci * c.r + r) * c.s + s) * pq;
        const ColumnRange valid = valid_columns(c, s);
        const int64_t offset = s * c.a.dilation_w - c.a.pad_w;
        for (int64_t p = 0; p < c.p; ++p) {
          const int64_t ih = in_row(c, p, r);
          if (ih < 0 || ih >= c.x.h) continue;
          float* line = plane + ih * c.x.w;
          const float* in = row + p * c.q;
          if (c.a.stride_w == 1) {
            for (int64_t q = valid.lo; q < valid.hi; ++q) line[offset + q] += in[q];
          } else {
            for (int64_t q = valid.lo; q < valid.hi; ++q) line[offset + q * c.a.stride_w] += in[q];
          }
        }
      }
    }
  }
}

// A product of thread |worker| (its packing scratch): op(A) is m x k, op(B) k x n, C m x n,
// with the row lengths given; the operands' addresses are set per image.
Gemm thread_gemm(const KernelArgs& args, uint32_t worker, bool trans_a, bool trans_b, int64_t m,
                 int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  Gemm g{};
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = 1.0f;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.pack = gemm_pack(args, worker);
  return g;
}

// Computes span columns [i0, i1) of images [n0, n1) of convolution |c| (unit stride, |ps| =
// padded_span(c) with chunk > 0) on thread |worker|, every group: x [N, C, H, W] in, y [N, K,
// P, Q] out. set_filters(gm, g) points op(A) of |gm| at group g's filters [kg, cg * R * S].
template <typename SetFilters>
void padded_conv(const KernelArgs& args, uint32_t worker, const ConvShape& c, const PaddedSpan& ps,
                 int64_t n0, int64_t n1, int64_t i0, int64_t i1, const float* x, float* y,
                 const SetFilters& set_filters) {
  const int64_t hw = c.x.h * c.x.w, pq = c.p * c.q, crs = c.cg * c.r * c.s;
  Gemm gm = thread_gemm(args, worker, false, false, c.kg, 0, crs, crs, 0, 0);
  float* padded = gm.pack + kGemmWalkFreeFrom;
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t g = 0; g < c.a.groups; ++g) {
      set_filters(gm, g);
      const float* x_g = x + (n * c.x.c + g * c.cg) * hw;
      float* y_g = y + (n * c.k + g * c.kg) * pq;
      for (int64_t j0 = i0; j0 < i1; j0 += ps.chunk) {
        const int64_t cols = i1 - j0 < ps.chunk ? i1 - j0 : ps.chunk;
        const int64_t len = cols + ps.reach + kGemmColumnSlack;
        copy_padded(c, ps.wp, x_g, j0, len, padded);
        float* product = padded + c.cg * len;
        gm.n = cols;
        gm.b = padded;
        gm.b_walk = {c.s, c.r, c.a.dilation_w, c.a.dilation_h * ps.wp, len};
        gm.c = product;
        gm.ldc = cols;
        packed_gemm(gm);
        // Span column j is output (j / Wp, j % Wp) where j % Wp < Q.
        for (int64_t k = 0; k < c.kg; ++k) {
          const float* from = product + k * cols;
          float* to = y_g + k * pq;
          for (int64_t j = j0; j < j0 + cols;) {
            const int64_t p = j / ps.wp, q = j % ps.wp;
            const int64_t run = ps.wp - q < j0 + cols - j ? ps.wp - q : j0 + cols - j;
            if (q < c.q) {
              const int64_t kept = c.q - q < run ? c.q - q : run;
              memcpy(to + p * c.q + q, from + (j - j0), static_cast<size_t>(kept) * sizeof(float));
            }
            j += run;
          }
        }
      }
    }
  }
}

// Computes images [n0, n1) of convolution |c| (|pi| = padded_images(c, free) with images > 0,
// free being the scratch beside the packed engine's op(A)) on thread |worker|, every group,
// straight into y: x [N, C, H, W] in, y [N, K, P, Q] out. pi.images padded images at a time are
// one product per group, which packs the group's filters once for all of them.
// set_filters(gm, g) points op(A) of |gm| at group g's filters.
template <typename SetFilters>
void image_conv(const KernelArgs& args, uint32_t worker, const ConvShape& c, const PaddedImages& pi,
                int64_t n0, int64_t n1, const float* x, float* y, const SetFilters& set_filters) {
  const int64_t hw = c.x.h * c.x.w, pq = c.p * c.q, crs = c.cg * c.r * c.s;
  Gemm gm = thread_gemm(args, worker, false, false, c.kg, 0, crs, crs, 0, pq);
  float* free = gm.pack + kGemmWalkFreeFrom;
  int64_t* taps = reinterpret_cast<int64_t*>(free);
  fill_tap_offsets(c, pi, taps);
  float* copies = free + pi.copies_at;
  gm.b = copies;
  for (int64_t first = n0; first < n1; first += pi.images) {
    const int64_t count = n1 - first < pi.images ? n1 - first : pi.images;
    gm.b_images = {count, c.p, c.q, pi.wp, c.cg * pi.channel, c.k * pq, taps};
    for (int64_t g = 0; g < c.a.groups; ++g) {
      for (int64_t i = 0; i < count; ++i) {
        const float* x_g = x + ((first + i) * c.x.c + g * c.cg) * hw;
        for (int64_t ci = 0; ci < c.cg; ++ci)
          copy_phases(c, pi, x_g + ci * hw, copies + (i * c.cg + ci) * pi.channel);
      }
      set_filters(gm, g);
      gm.c = y + (first * c.k + g * c.kg) * pq;
      packed_gemm(gm);
    }
  }
}

// Floats of a thread's scratch that image_conv has for its tap offsets and padded images.
constexpr int64_t kImageScratch = kGemmPackFloats - kGemmWalkFreeFrom;

// Calls body(n0, n1, i0, i1, worker) on the threads for padded_conv's parts of |c|: whole
// images where there are at least as many as threads (a late stage's span, 78 columns for 8x8
// images, is too short to cut evenly), else parts of every image's span columns. Either way
// each output is one product's column, so the bits do not depend on the cut.
template <typename Body>
void for_padded_parts(const KernelArgs& args, const ConvShape& c, const PaddedSpan& ps,
                      const Body& body) {
  const int64_t span = ps.span;
  if (c.x.n >= static_cast<int64_t>(thread_count(args))) {
    parallel_for(args, c.x.n, 1,
                 [&](int64_t n0, int64_t n1, uint32_t worker) { body(n0, n1, 0, span, worker); });
  } else {
    parallel_for(args, span, kColumnGrain,
                 [&](int64_t i0, int64_t i1, uint32_t worker) { body(0, c.x.n, i0, i1, worker); });
  }
}

}  // namespace

remat_status conv(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const ConvShape c = shape_of(call, in_ref(args, 0), in_ref(args, 1));
  const float* x = in_f32(args, 0);
  const float* w = in_f32(args, 1);
  const float* bias = call.num_inputs > 2 ? in_f32(args, 2) : nullptr;
  float* y = out_f32(args, 0);
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, crs = c.cg * c.r * c.s;
  const bool pointwise = conv_is_pointwise(c);
  const PaddedSpan ps = kPaddedPaths ? padded_span(c) : PaddedSpan{};
  const PaddedImages pi = kPaddedPaths ? padded_images(c, kImageScratch) : PaddedImages{};
  auto set_filters = [&](Gemm& gm, int64_t g) { gm.a = w + g * c.kg * crs; };
  if (uses_depthwise_loops(c)) {
    parallel_for(args, c.k, 1,
                 [&](int64_t k0, int64_t k1, uint32_t) { depthwise_forward(c, x, w, k0, k1, y); });
  } else if (winograd_conv(args, c, x, w, false, y)) {
    // Winograd's F(2x2, 3x3) wrote y (conv/winograd_paths.h).
  } else if (kPaddedPaths && !pointwise && pi.images > 0 &&
             c.x.n >= static_cast<int64_t>(thread_count(args))) {
    // Q a multiple of kGemmImageGrain: each thread owns whole images.
    parallel_for(args, c.x.n, 1, [&](int64_t n0, int64_t n1, uint32_t worker) {
      image_conv(args, worker, c, pi, n0, n1, x, y, set_filters);
    });
  } else if (kPaddedPaths && !pointwise && ps.chunk > 0) {
    // Unit stride: each thread owns images or span columns (for_padded_parts).
    for_padded_parts(args, c, ps,
                     [&](int64_t n0, int64_t n1, int64_t i0, int64_t i1, uint32_t worker) {
                       padded_conv(args, worker, c, ps, n0, n1, i0, i1, x, y, set_filters);
                     });
  } else {
    // Each thread owns output columns [i0, i1) of every image: its part of the column matrix
    // (packed from the image, or the image itself for a pointwise filter) and of the product.
    parallel_for(args, pq, kColumnGrain, [&](int64_t i0, int64_t i1, uint32_t worker) {
      Gemm gm = thread_gemm(args, worker, false, false, c.kg, i1 - i0, crs, crs, hw, pq);
      ImplicitColumns columns{&c, nullptr, i0};
      if (!pointwise) gm.pack_b_with = {pack_columns, &columns};
      for (int64_t n = 0; n < c.x.n; ++n) {
        for (int64_t g = 0; g < c.a.groups; ++g) {
          columns.x_g = x + (n * c.x.c + g * c.cg) * hw;
          gm.a = w + g * c.kg * crs;
          gm.b = columns.x_g + i0;
          gm.c = y + (n * c.k + g * c.kg) * pq + i0;
          packed_gemm(gm);
        }
      }
    });
  }
  if (bias != nullptr) {
    parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) {
      for (int64_t n = 0; n < c.x.n; ++n) {
        for (int64_t k = k0; k < k1; ++k) {
          float* out = y + (n * c.k + k) * pq;
          for (int64_t i = 0; i < pq; ++i) out[i] += bias[k];
        }
      }
    });
  }
  return REMAT_OK;
}

remat_status conv_grad_input(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const ConvShape c = shape_of(call, out_ref(args, 0), in_ref(args, 1));
  const float* dy = in_f32(args, 0);
  const float* w = in_f32(args, 1);
  float* dx = out_f32(args, 0);
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, rs = c.r * c.s, crs = c.cg * rs;
  if (uses_depthwise_loops(c)) {
    parallel_for(args, c.x.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
      depthwise_grad_input(c, dy, w, c0, c1, dx);
    });
    return REMAT_OK;
  }
  if (conv_grad_input_workspace_elems(c) == 0) {
    // Unit stride: the convolution of dy with the flipped filters (flipped_conv), dy itself its
    // column matrix for a pointwise filter. Threads cut it as they cut the forward pass.
    const ConvShape f = flipped_conv(c);
    if (winograd_conv(args, f, dy, w, true, dx)) return REMAT_OK;
    const bool pointwise = conv_is_pointwise(c);
    const PaddedSpan ps = kPaddedPaths ? padded_span(f) : PaddedSpan{};
    const PaddedImages pi = kPaddedPaths ? padded_images(f, kImageScratch) : PaddedImages{};
    if (kPaddedPaths && !pointwise && pi.images > 0 &&
        c.x.n >= static_cast<int64_t>(thread_count(args))) {
      parallel_for(args, c.x.n, 1, [&](int64_t n0, int64_t n1, uint32_t worker) {
        FlippedFilters filters{&c, nullptr};
        image_conv(args, worker, f, pi, n0, n1, dy, dx, [&](Gemm& gm, int64_t g) {
          filters.w_g = w + g * c.kg * crs;
          gm.pack_a_with = {pack_flipped_filters, &filters};
        });
      });
      return REMAT_OK;
    }
    if (kPaddedPaths && !pointwise && ps.chunk > 0) {
      for_padded_parts(
          args, f, ps, [&](int64_t n0, int64_t n1, int64_t i0, int64_t i1, uint32_t worker) {
            FlippedFilters filters{&c, nullptr};
            padded_conv(args, worker, f, ps, n0, n1, i0, i1, dy, dx, [&](Gemm& gm, int64_t g) {
              filters.w_g = w + g * c.kg * crs;
              gm.pack_a_with = {pack_flipped_filters, &filters};
            });
          });
      return REMAT_OK;
    }
    parallel_for(args, hw, kColumnGrain, [&](int64_t i0, int64_t i1, uint32_t worker) {
      Gemm gm = thread_gemm(args, worker, false, false, c.cg, i1 - i0, c.kg * rs, 0, pq, hw);
      FlippedFilters filters{&c, nullptr};
      ImplicitColumns columns{&f, nullptr, i0};
      gm.pack_a_with = {pack_flipped_filters, &filters};
      if (!pointwise) gm.pack_b_with = {pack_columns, &columns};
      for (int64_t n = 0; n < c.x.n; ++n) {
        for (int64_t g = 0; g < c.a.groups; ++g) {
          filters.w_g = w + g * c.kg * crs;
          columns.x_g = dy + (n * c.k + g * c.kg) * pq;
          gm.b = columns.x_g + i0;
          gm.c = dx + (n * c.x.c + g * c.cg) * hw + i0;
          packed_gemm(gm);
        }
      }
    });
    return REMAT_OK;
  }
  float* col = out_f32(args, 1);
  // Strided: each thread owns input channels [c0, c1) of every group: the workspace's rows of
  // their taps, w_g^T [cg*R*S, kg] times dy_g [kg, P*Q], and col2im into their planes.
  parallel_for(args, c.cg, 1, [&](int64_t c0, int64_t c1, uint32_t worker) {
    Gemm gm = thread_gemm(args, worker, true, false, (c1 - c0) * rs, pq, c.kg, crs, pq, pq);
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t g = 0; g < c.a.groups; ++g) {
        gm.a = w + g * c.kg * crs + c0 * rs;
        gm.b = dy + (n * c.k + g * c.kg) * pq;
        gm.c = col + c0 * rs * pq;
        packed_gemm(gm);
        col2im(c, col, c0, c1, dx + (n * c.x.c + g * c.cg) * hw);
      }
    }
  });
  return REMAT_OK;
}

remat_status conv_grad_weight(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const ConvShape c = shape_of(call, in_ref(args, 1), out_ref(args, 0));
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  float* dw = out_f32(args, 0);
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, crs = c.cg * c.r * c.s;
  if (uses_depthwise_loops(c)) {
    parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) {
      depthwise_grad_weight(c, dy, x, k0, k1, dw);
    });
    return REMAT_OK;
  }
  if (winograd_conv_grad_weight(args, c, dy, x, dw)) return REMAT_OK;
  if (kPaddedPaths && conv_grad_weight_over_images(args, c, dy, x, dw)) return REMAT_OK;
  if (kPaddedPaths && conv_grad_weight_over_image_span(args, c, dy, x, dw)) return REMAT_OK;
  // Where neither way over padded images applies: each thread owns filter taps [j0, j1)
  // (columns of dw_g, rows of the column matrix): dw_g (+)= dy_g [kg, P*Q] times col^T [P*Q,
  // taps], images in order; col^T is packed from the image, or is the image itself for a
  // pointwise filter.
  const bool pointwise = conv_is_pointwise(c);
  parallel_for(args, crs, kColumnGrain, [&](int64_t j0, int64_t j1, uint32_t worker) {
    Gemm gm = thread_gemm(args, worker, false, true, c.kg, j1 - j0, pq, pq, hw, crs);
    ImplicitColumns columns{&c, nullptr, j0};
    if (!pointwise) gm.pack_b_with = {pack_columns_transposed, &columns};
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t g = 0; g < c.a.groups; ++g) {
        columns.x_g = x + (n * c.x.c + g * c.cg) * hw;
        gm.a = dy + (n * c.k + g * c.kg) * pq;
        gm.b = columns.x_g + j0 * hw;
        gm.c = dw + g * c.kg * crs + j0;
        gm.beta = n == 0 ? 0.0f : 1.0f;
        packed_gemm(gm);
      }
    }
  });
  return REMAT_OK;
}

remat_status channel_sum(const KernelArgs& args) {
  const TensorRef& t = in_ref(args, 0);
  const float* dy = in_f32(args, 0);
  float* db = out_f32(args, 0);
  const int64_t n = t.dims[0], ch = t.dims[1];
  const int64_t inner = n * ch > 0 ? t.numel / (n * ch) : 0;
  parallel_for(args, ch, 1, [&](int64_t k0, int64_t k1, uint32_t) {
    for (int64_t k = k0; k < k1; ++k) {
      Accum acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float* row = dy + (i * ch + k) * inner;
        for (int64_t j = 0; j < inner; ++j) acc += row[j];
      }
      db[k] = static_cast<float>(acc);
    }
  });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
