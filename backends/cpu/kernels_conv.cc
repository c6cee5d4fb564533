// Convolutions (conv, conv_grad_input, conv_grad_weight) and the conv bias's gradient
// (channel_sum). The general case is im2col into the op's workspace, one image and group at a
// time, and a GEMM; 1x1 unit-stride unpadded convolutions multiply the input in place, and one
// input channel per group (depthwise) runs as direct loops (plan/spatial_shape.h decides which,
// for the verifier too).
#include <string.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {
namespace {

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

// col[(ci * R + r) * S + s][p * Q + q] = x_g[ci, in_row, in_col], 0 in the padding; |x_g| is
// the first of the group's cg channels of one image.
void im2col(const ConvShape& c, const float* x_g, float* col) {
  const int64_t pq = c.p * c.q;
  for (int64_t ci = 0; ci < c.cg; ++ci) {
    const float* plane = x_g + ci * c.x.h * c.x.w;
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        float* row = col + ((ci * c.r + r) * c.s + s) * pq;
        for (int64_t p = 0; p < c.p; ++p) {
          const int64_t ih = in_row(c, p, r);
          float* out = row + p * c.q;
          if (ih < 0 || ih >= c.x.h) {
            memset(out, 0, static_cast<size_t>(c.q) * sizeof(float));
            continue;
          }
          const float* line = plane + ih * c.x.w;
          for (int64_t q = 0; q < c.q; ++q) {
            const int64_t iw = in_col(c, q, s);
            out[q] = iw >= 0 && iw < c.x.w ? line[iw] : 0.0f;
          }
        }
      }
    }
  }
}

// The adjoint of im2col: dx_g[ci, in_row, in_col] += col[...], in im2col's order; dx_g is
// zeroed first.
void col2im(const ConvShape& c, const float* col, float* dx_g) {
  const int64_t pq = c.p * c.q;
  memset(dx_g, 0, static_cast<size_t>(c.cg * c.x.h * c.x.w) * sizeof(float));
  for (int64_t ci = 0; ci < c.cg; ++ci) {
    float* plane = dx_g + ci * c.x.h * c.x.w;
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        const float* row = col + ((ci * c.r + r) * c.s + s) * pq;
        for (int64_t p = 0; p < c.p; ++p) {
          const int64_t ih = in_row(c, p, r);
          if (ih < 0 || ih >= c.x.h) continue;
          float* line = plane + ih * c.x.w;
          for (int64_t q = 0; q < c.q; ++q) {
            const int64_t iw = in_col(c, q, s);
            if (iw >= 0 && iw < c.x.w) line[iw] += row[p * c.q + q];
          }
        }
      }
    }
  }
}

// One group's GEMM operands within image n: the group's filters [kg, cg*R*S], its input
// channels and its output channels.
struct GroupPtrs {
  int64_t w_offset, x_offset, y_offset;
};
GroupPtrs group_ptrs(const ConvShape& c, int64_t n, int64_t g) {
  const int64_t hw = c.x.h * c.x.w, pq = c.p * c.q;
  return {g * c.kg * c.cg * c.r * c.s, (n * c.x.c + g * c.cg) * hw, (n * c.k + g * c.kg) * pq};
}

Gemm base_gemm(const KernelArgs& args) {
  Gemm g{};
  g.alpha = 1.0f;
  g.pack = static_cast<float*>(args.scratch);
  return g;
}

// Depthwise forward: y[n, k] = sum over (r, s) of w[k, 0, r, s] * x[n, k / kg] shifted.
void depthwise_forward(const ConvShape& c, const float* x, const float* w, float* y) {
  for (int64_t n = 0; n < c.x.n; ++n) {
    for (int64_t k = 0; k < c.k; ++k) {
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

// Depthwise input gradient: dx[n, k / kg] += w[k, 0, r, s] * dy[n, k] at every tap, in
// output order; dx is zeroed first.
void depthwise_grad_input(const ConvShape& c, const float* dy, const float* w, float* dx) {
  memset(dx, 0, static_cast<size_t>(c.x.n * c.x.c * c.x.h * c.x.w) * sizeof(float));
  for (int64_t n = 0; n < c.x.n; ++n) {
    for (int64_t k = 0; k < c.k; ++k) {
      float* plane = dx + (n * c.x.c + k / c.kg) * c.x.h * c.x.w;
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

// Depthwise weight gradient: one double accumulator per filter tap, images and positions in
// order.
void depthwise_grad_weight(const ConvShape& c, const float* dy, const float* x, float* dw) {
  const int64_t pq = c.p * c.q;
  for (int64_t k = 0; k < c.k; ++k) {
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
  float* y = out_f32(args, 0);
  const int64_t pq = c.p * c.q;
  if (uses_depthwise_loops(c)) {
    depthwise_forward(c, x, w, y);
  } else {
    float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
    Gemm gm = base_gemm(args);
    gm.m = c.kg;
    gm.n = pq;
    gm.k = c.cg * c.r * c.s;
    gm.lda = gm.k;
    gm.ldb = pq;
    gm.ldc = pq;
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t g = 0; g < c.a.groups; ++g) {
        const GroupPtrs at = group_ptrs(c, n, g);
        if (col != nullptr) im2col(c, x + at.x_offset, col);
        gm.a = w + at.w_offset;
        gm.b = col != nullptr ? col : x + at.x_offset;
        gm.c = y + at.y_offset;
        gemm(gm);
      }
    }
  }
  if (call.num_inputs > 2) {
    const float* bias = in_f32(args, 2);
    for (int64_t n = 0; n < c.x.n; ++n) {
      for (int64_t k = 0; k < c.k; ++k) {
        float* out = y + (n * c.k + k) * pq;
        for (int64_t i = 0; i < pq; ++i) out[i] += bias[k];
      }
    }
  }
  return REMAT_OK;
}

remat_status conv_grad_input(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const ConvShape c = shape_of(call, out_ref(args, 0), in_ref(args, 1));
  const float* dy = in_f32(args, 0);
  const float* w = in_f32(args, 1);
  float* dx = out_f32(args, 0);
  const int64_t pq = c.p * c.q;
  if (uses_depthwise_loops(c)) {
    depthwise_grad_input(c, dy, w, dx);
    return REMAT_OK;
  }
  float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
  // dcol = w_g^T dy_g: [cg*R*S, kg] x [kg, P*Q].
  Gemm gm = base_gemm(args);
  gm.trans_a = true;
  gm.m = c.cg * c.r * c.s;
  gm.n = pq;
  gm.k = c.kg;
  gm.lda = gm.m;
  gm.ldb = pq;
  gm.ldc = pq;
  for (int64_t n = 0; n < c.x.n; ++n) {
    for (int64_t g = 0; g < c.a.groups; ++g) {
      const GroupPtrs at = group_ptrs(c, n, g);
      gm.a = w + at.w_offset;
      gm.b = dy + at.y_offset;
      gm.c = col != nullptr ? col : dx + at.x_offset;
      gemm(gm);
      if (col != nullptr) col2im(c, col, dx + at.x_offset);
    }
  }
  return REMAT_OK;
}

remat_status conv_grad_weight(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const ConvShape c = shape_of(call, in_ref(args, 1), out_ref(args, 0));
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  float* dw = out_f32(args, 0);
  const int64_t pq = c.p * c.q;
  if (uses_depthwise_loops(c)) {
    depthwise_grad_weight(c, dy, x, dw);
    return REMAT_OK;
  }
  float* col = call.num_outputs > 1 ? out_f32(args, 1) : nullptr;
  // dw_g (+)= dy_g col^T: [kg, P*Q] x [P*Q, cg*R*S], images in order.
  Gemm gm = base_gemm(args);
  gm.trans_b = true;
  gm.m = c.kg;
  gm.n = c.cg * c.r * c.s;
  gm.k = pq;
  gm.lda = pq;
  gm.ldb = pq;
  gm.ldc = gm.n;
  for (int64_t n = 0; n < c.x.n; ++n) {
    for (int64_t g = 0; g < c.a.groups; ++g) {
      const GroupPtrs at = group_ptrs(c, n, g);
      if (col != nullptr) im2col(c, x + at.x_offset, col);
      gm.a = dy + at.y_offset;
      gm.b = col != nullptr ? col : x + at.x_offset;
      gm.c = dw + at.w_offset;
      gm.beta = n == 0 ? 0.0f : 1.0f;
      gemm(gm);
    }
  }
  return REMAT_OK;
}

remat_status channel_sum(const KernelArgs& args) {
  const TensorRef& t = in_ref(args, 0);
  const float* dy = in_f32(args, 0);
  float* db = out_f32(args, 0);
  const int64_t n = t.dims[0], ch = t.dims[1];
  const int64_t inner = n * ch > 0 ? t.numel / (n * ch) : 0;
  for (int64_t k = 0; k < ch; ++k) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float* row = dy + (i * ch + k) * inner;
      for (int64_t j = 0; j < inner; ++j) acc += row[j];
    }
    db[k] = static_cast<float>(acc);
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
