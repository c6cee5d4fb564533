// Convolutions (conv, conv_grad_input, conv_grad_weight) and the conv bias's gradient
// (channel_sum). The general case is im2col into the op's workspace, one image and group at a
// time, and a packed GEMM; 1x1 unit-stride unpadded convolutions multiply the input in place,
// and one input channel per group (depthwise) runs as direct loops (plan/spatial_shape.h
// decides which, for the verifier too).
//
// Threads share the one workspace by owning a slice of it (backends/cpu/parallel.h): the
// forward pass cuts the output positions (columns of the column matrix), the input gradient
// the input channels (rows, which col2im scatters into disjoint planes), the weight gradient
// the filter taps (rows, hence columns of dw). Each thread loops over every image, so a slice
// sums nothing that another thread sums too.
#include <string.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {
namespace {

// Columns of a thread's slice of the forward product: a whole AVX-512 micro-tile.
constexpr int64_t kColumnGrain = 32;

// The convolution of |call| with input dims |x| and filter dims |w|.
ConvShape shape_of(const OpCall& call, const TensorRef& x, const TensorRef& w) {
  return conv_shape(x.dims, w.dims, x.rank, conv_attrs(call.iattrs));
}

// One input channel per group and a filter wider than 1x1 at unit stride: direct loops (the
// rest of conv_is_direct, a pointwise product, multiplies the input in place instead).
bool uses_depthwise_loops(const ConvShape& c) { return c.cg == 1 && !conv_is_pointwise(c); }

// Input row of output row |p| and filter row |r| (may lie in the padding).
inline int64_t in_row(const ConvShape& c, int64_t p, int64_t r) {
  return p * c.a.stride_h - c.a.pad_h + r * c.a.dilation_h;
}
inline int64_t in_col(const ConvShape& c, int64_t q, int64_t s) {
  return q * c.a.stride_w - c.a.pad_w + s * c.a.dilation_w;
}

// The output columns [lo, hi) whose input column for filter column |s| lies inside the image.
struct ColumnRange {
  int64_t lo, hi;
};
ColumnRange valid_columns(const ConvShape& c, int64_t s) {
  const int64_t offset = s * c.a.dilation_w - c.a.pad_w, stride = c.a.stride_w;
  int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t hi = c.x.w - offset <= 0 ? 0 : (c.x.w - offset + stride - 1) / stride;
  if (hi > c.q) hi = c.q;
  if (lo > hi) lo = hi;
  return {lo, hi};
}

// col[j][i] = x_g[ci, in_row, in_col] for rows j in [j0, j1) (j = (ci * R + r) * S + s) and
// columns i in [i0, i1) (i = p * Q + q) of one image's column matrix, 0 in the padding; rows
// are P * Q long. |x_g| is the first of the group's cg channels of the image.
void im2col(const ConvShape& c, const float* x_g, int64_t j0, int64_t j1, int64_t i0, int64_t i1, float* col) {
  const int64_t pq = c.p * c.q, rs = c.r * c.s;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t ci = j / rs, r = j % rs / c.s, s = j % c.s;
    const float* plane = x_g + ci * c.x.h * c.x.w;
    const ColumnRange valid = valid_columns(c, s);
    const int64_t offset = s * c.a.dilation_w - c.a.pad_w;
    float* row = col + j * pq;
    for (int64_t p = i0 / c.q; p * c.q < i1; ++p) {
      // This output row's part of [i0, i1), as columns q in [qa, qb).
      const int64_t qa = i0 > p * c.q ? i0 - p * c.q : 0;
      const int64_t qb = i1 < (p + 1) * c.q ? i1 - p * c.q : c.q;
      float* out = row + p * c.q;
      const int64_t ih = in_row(c, p, r);
      // Plain loops, not memcpy and memset: the runs are a row of a small image, too short
      // for a library call to pay.
      if (ih < 0 || ih >= c.x.h) {
        for (int64_t q = qa; q < qb; ++q) out[q] = 0.0f;
        continue;
      }
      const float* line = plane + ih * c.x.w;  // line[offset + q * stride] is column q's input
      const int64_t lo = valid.lo > qa ? (valid.lo < qb ? valid.lo : qb) : qa;
      const int64_t hi = valid.hi < qb ? (valid.hi > lo ? valid.hi : lo) : qb;
      for (int64_t q = qa; q < lo; ++q) out[q] = 0.0f;
      if (c.a.stride_w == 1) {
        for (int64_t q = lo; q < hi; ++q) out[q] = line[offset + q];
      } else {
        for (int64_t q = lo; q < hi; ++q) out[q] = line[offset + q * c.a.stride_w];
      }
      for (int64_t q = hi; q < qb; ++q) out[q] = 0.0f;
    }
  }
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
Gemm thread_gemm(const KernelArgs& args, uint32_t worker, bool trans_a, bool trans_b, int64_t m, int64_t n,
                 int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
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

// Depthwise forward for output channels [k0, k1): y[n, k] = sum over (r, s) of w[k, 0, r, s] *
// x[n, k / kg] shifted.
void depthwise_forward(const ConvShape& c, const float* x, const float* w, int64_t k0, int64_t k1, float* y) {
  for (int64_t n = 0; n < c.x.n; ++n) {
    for (int64_t k = k0; k < k1; ++k) {
      const float* plane = x + (n * c.x.c + k / c.kg) * c.x.h * c.x.w;
      const float* wk = w + k * c.r * c.s;
      float* out = y + (n * c.k + k) * c.p * c.q;
      for (int64_t p = 0; p < c.p; ++p) {
        for (int64_t q = 0; q < c.q; ++q) {
          float acc = 0.0f;
          for (int64_t r = 0; r < c.r; ++r) {
            const int64_t ih = in_row(c, p, r);
            if (ih < 0 || ih >= c.x.h) continue;
            for (int64_t s = 0; s < c.s; ++s) {
              const int64_t iw = in_col(c, q, s);
              if (iw >= 0 && iw < c.x.w) acc += wk[r * c.s + s] * plane[ih * c.x.w + iw];
            }
          }
          out[p * c.q + q] = acc;
        }
      }
    }
  }
}

// Depthwise input gradient for input channels [c0, c1): dx[n, ci] += w[k, 0, r, s] * dy[n, k]
// at every tap of ci's kg output channels k, in output order; those planes are zeroed first.
void depthwise_grad_input(const ConvShape& c, const float* dy, const float* w, int64_t c0, int64_t c1, float* dx) {
  const int64_t hw = c.x.h * c.x.w;
  for (int64_t n = 0; n < c.x.n; ++n) {
    memset(dx + (n * c.x.c + c0) * hw, 0, static_cast<size_t>((c1 - c0) * hw) * sizeof(float));
    for (int64_t k = c0 * c.kg; k < c1 * c.kg; ++k) {
      float* plane = dx + (n * c.x.c + k / c.kg) * hw;
      const float* wk = w + k * c.r * c.s;
      const float* grad = dy + (n * c.k + k) * c.p * c.q;
      for (int64_t p = 0; p < c.p; ++p) {
        for (int64_t q = 0; q < c.q; ++q) {
          const float d = grad[p * c.q + q];
          for (int64_t r = 0; r < c.r; ++r) {
            const int64_t ih = in_row(c, p, r);
            if (ih < 0 || ih >= c.x.h) continue;
            for (int64_t s = 0; s < c.s; ++s) {
              const int64_t iw = in_col(c, q, s);
              if (iw >= 0 && iw < c.x.w) plane[ih * c.x.w + iw] += wk[r * c.s + s] * d;
            }
          }
        }
      }
    }
  }
}

// Depthwise weight gradient for output channels [k0, k1): one double accumulator per filter
// tap, images and positions in order.
void depthwise_grad_weight(const ConvShape& c, const float* dy, const float* x, int64_t k0, int64_t k1, float* dw) {
  const int64_t pq = c.p * c.q;
  for (int64_t k = k0; k < k1; ++k) {
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        double acc = 0.0;
        for (int64_t n = 0; n < c.x.n; ++n) {
          const float* plane = x + (n * c.x.c + k / c.kg) * c.x.h * c.x.w;
          const float* grad = dy + (n * c.k + k) * pq;
          for (int64_t p = 0; p < c.p; ++p) {
            const int64_t ih = in_row(c, p, r);
            if (ih < 0 || ih >= c.x.h) continue;
            for (int64_t q = 0; q < c.q; ++q) {
              const int64_t iw = in_col(c, q, s);
              if (iw >= 0 && iw < c.x.w) acc += static_cast<double>(grad[p * c.q + q]) * plane[ih * c.x.w + iw];
            }
          }
        }
        dw[(k * c.r + r) * c.s + s] = static_cast<float>(acc);
      }
    }
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
  if (uses_depthwise_loops(c)) {
    parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) { depthwise_forward(c, x, w, k0, k1, y); });
  } else {
    float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
    // Each thread owns output columns [i0, i1) of every image: its part of the column matrix
    // and of the product.
    parallel_for(args, pq, kColumnGrain, [&](int64_t i0, int64_t i1, uint32_t worker) {
      Gemm gm = thread_gemm(args, worker, false, false, c.kg, i1 - i0, crs, crs, col != nullptr ? pq : hw, pq);
      for (int64_t n = 0; n < c.x.n; ++n) {
        for (int64_t g = 0; g < c.a.groups; ++g) {
          const float* x_g = x + (n * c.x.c + g * c.cg) * hw;
          if (col != nullptr) im2col(c, x_g, 0, crs, i0, i1, col);
          gm.a = w + g * c.kg * crs;
          gm.b = (col != nullptr ? col : x_g) + i0;
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
    parallel_for(args, c.x.c, 1, [&](int64_t c0, int64_t c1, uint32_t) { depthwise_grad_input(c, dy, w, c0, c1, dx); });
    return REMAT_OK;
  }
  float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
  // Each thread owns input channels [c0, c1) of every group: dcol's rows of their taps, w_g^T
  // [cg*R*S, kg] times dy_g [kg, P*Q], and col2im into their planes.
  parallel_for(args, c.cg, 1, [&](int64_t c0, int64_t c1, uint32_t worker) {
    Gemm gm = thread_gemm(args, worker, true, false, (c1 - c0) * rs, pq, c.kg, crs, pq, col != nullptr ? pq : hw);
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t g = 0; g < c.a.groups; ++g) {
        float* dx_g = dx + (n * c.x.c + g * c.cg) * hw;
        gm.a = w + g * c.kg * crs + c0 * rs;
        gm.b = dy + (n * c.k + g * c.kg) * pq;
        gm.c = col != nullptr ? col + c0 * rs * pq : dx_g + c0 * hw;
        packed_gemm(gm);
        if (col != nullptr) col2im(c, col, c0, c1, dx_g);
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
    parallel_for(args, c.k, 1, [&](int64_t k0, int64_t k1, uint32_t) { depthwise_grad_weight(c, dy, x, k0, k1, dw); });
    return REMAT_OK;
  }
  float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
  // Each thread owns filter taps [j0, j1) (columns of dw_g, rows of the column matrix): dw_g
  // (+)= dy_g [kg, P*Q] times col^T [P*Q, taps], images in order.
  parallel_for(args, crs, kColumnGrain, [&](int64_t j0, int64_t j1, uint32_t worker) {
    Gemm gm = thread_gemm(args, worker, false, true, c.kg, j1 - j0, pq, pq, col != nullptr ? pq : hw, crs);
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t g = 0; g < c.a.groups; ++g) {
        const float* x_g = x + (n * c.x.c + g * c.cg) * hw;
        if (col != nullptr) im2col(c, x_g, j0, j1, 0, pq, col);
        gm.a = dy + (n * c.k + g * c.kg) * pq;
        gm.b = col != nullptr ? col + j0 * pq : x_g + j0 * hw;
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
      double acc = 0.0;
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
