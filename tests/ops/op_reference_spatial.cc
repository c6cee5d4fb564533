// Float64 references of the spatial ops (see op_reference_spatial.h).
#include "op_reference_spatial.h"

#include <math.h>

namespace ops_test {

namespace {

int64_t at4(int64_t c, int64_t h, int64_t w, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((i0 * c + i1) * h + i2) * w + i3;
}

Dims nchw_dims(bool rank3, int64_t n, int64_t c, int64_t h, int64_t w) {
  return rank3 ? Dims{n, c, w} : Dims{n, c, h, w};
}

// floor(a / b) for b > 0 and any sign of a.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

// ---- Convolution --------------------------------------------------------------------------------

// torch.nn.Conv2d: out = floor((in + 2 pad - dilation (kernel - 1) - 1) / stride + 1).
int64_t ConvProblem::p() const {
  return floor_div(h + 2 * pad_h - dilation_h * (r - 1) - 1, stride_h) + 1;
}
int64_t ConvProblem::q() const {
  return floor_div(w + 2 * pad_w - dilation_w * (s - 1) - 1, stride_w) + 1;
}
Dims ConvProblem::x_dims() const { return nchw_dims(rank3, n, c, h, w); }
Dims ConvProblem::w_dims() const { return nchw_dims(rank3, k, c / groups, r, s); }
Dims ConvProblem::y_dims() const { return nchw_dims(rank3, n, k, p(), q()); }
std::vector<int64_t> ConvProblem::iattrs() const {
  return {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups};
}
int64_t ConvProblem::grad_input_workspace() const {
  const bool unit_stride = stride_h == 1 && stride_w == 1;
  const int64_t cg = c / groups;
  return unit_stride || cg == 1 ? 0 : cg * r * s * p() * q();
}

const std::vector<ConvProblem>& conv_problems() {
  // name, rank3, n, c, h, w, k, r, s, stride h w, pad h w, dilation h w, groups.
  // clang-format off
  static const std::vector<ConvProblem> problems = {
      {"3x3 stride 2 padding 1", false, 2, 3, 7, 8, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1},
      {"3x3 dilation 2", false, 2, 3, 9, 8, 2, 3, 3, 1, 1, 2, 1, 2, 2, 1},
      {"groups 2", false, 2, 4, 6, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"groups 2 stride 2 dilation 2", false, 2, 4, 8, 7, 4, 3, 2, 2, 1, 1, 0, 2, 1, 2},
      {"depthwise x2 stride 2 padding 1", false, 2, 3, 7, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 3},
      {"depthwise dilation 2", false, 1, 4, 7, 7, 4, 3, 3, 1, 1, 2, 2, 2, 2, 4},
      {"single input channel", false, 2, 1, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"1x1 pointwise", false, 2, 5, 4, 6, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1},
      {"1x1 stride 2", false, 2, 5, 5, 6, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1},
      {"1x1 padding 1", false, 1, 3, 4, 4, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {"2x3 per-axis stride padding dilation", false, 1, 2, 6, 9, 3, 2, 3, 2, 1, 1, 2, 1, 2, 1},
      {"conv1d stride 2 padding 2 dilation 2", true, 2, 3, 1, 11, 4, 1, 3, 1, 2, 0, 2, 1, 2, 1},
      {"conv1d depthwise padding 1", true, 2, 4, 1, 9, 4, 1, 3, 1, 1, 0, 1, 1, 1, 4},
      {"8 to 20 channels", false, 2, 8, 6, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // Output rows a multiple of 4 (kGemmImageGrain): whole padded images, loaded 16, 8 or 4
      // columns at a time, and a cropped input gradient (its flipped padding is 4 - 5 = -1).
      // With 2 images, 3 threads cut the span instead, to the same bits.
      {"3x3 padding 1 on 3x16", false, 3, 2, 3, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"3x3 dilation 2 in 2 groups on 8x8", false, 2, 4, 8, 8, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2},
      {"3x3 padding 1 on 4x12", false, 3, 3, 4, 12, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"3x5 padding 1 and 5 on 5x16", false, 3, 2, 5, 16, 3, 3, 5, 1, 1, 1, 5, 1, 1, 1},
      // Strided, Q a multiple of 4: the padded images split into phases, some never read.
      {"3x3 stride 2 dilation 2 on 15x16", false, 3, 3, 15, 16, 4, 3, 3, 2, 2, 2, 2, 2, 2, 1},
      {"1x1 stride 2 on 8x8", false, 3, 5, 8, 8, 3, 1, 1, 2, 2, 0, 0, 1, 1, 1},
      {"3x2 stride 3 and 2, 2 groups on 12x16", false, 3, 4, 12, 16, 6, 3, 2, 3, 2, 1, 0, 1, 1, 2},
  };
  // clang-format on
  return problems;
}

namespace {

// Calls term(y_index, x_index, w_index) for every product of conv's definition inside the
// image: each output position (n, k, i, j) and filter tap (cc, a, b) of its group, in order.
template <typename Term>
void for_each_conv_term(const ConvProblem& cp, const Term& term) {
  const int64_t p = cp.p(), q = cp.q(), cg = cp.c / cp.groups, kg = cp.k / cp.groups;
  for (int64_t n = 0; n < cp.n; ++n) {
    for (int64_t k = 0; k < cp.k; ++k) {
      const int64_t group = k / kg;
      for (int64_t i = 0; i < p; ++i) {
        for (int64_t j = 0; j < q; ++j) {
          const size_t yi = static_cast<size_t>(at4(cp.k, p, q, n, k, i, j));
          for (int64_t cc = 0; cc < cg; ++cc) {
            const int64_t ci = group * cg + cc;
            for (int64_t a = 0; a < cp.r; ++a) {
              const int64_t ih = i * cp.stride_h - cp.pad_h + a * cp.dilation_h;
              if (ih < 0 || ih >= cp.h) continue;
              for (int64_t b = 0; b < cp.s; ++b) {
                const int64_t iw = j * cp.stride_w - cp.pad_w + b * cp.dilation_w;
                if (iw < 0 || iw >= cp.w) continue;
                term(yi, static_cast<size_t>(at4(cp.c, cp.h, cp.w, n, ci, ih, iw)),
                     static_cast<size_t>(at4(cg, cp.r, cp.s, k, cc, a, b)));
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

Vec ref_conv(const ConvProblem& cp, const Vec& x, const Vec& w, const Vec& bias) {
  const int64_t pq = cp.p() * cp.q();
  Vec y(static_cast<size_t>(cp.n * cp.k * pq), 0.0);
  if (!bias.empty()) {
    for (size_t yi = 0; yi < y.size(); ++yi)
      y[yi] = bias[yi / static_cast<size_t>(pq) % static_cast<size_t>(cp.k)];
  }
  for_each_conv_term(cp, [&](size_t yi, size_t xi, size_t wi) { y[yi] += x[xi] * w[wi]; });
  return y;
}

void ref_conv_adjoint(const ConvProblem& cp, const Vec& x, const Vec& w, const Vec& g, Vec* dx,
                      Vec* dw) {
  dx->assign(x.size(), 0.0);
  dw->assign(w.size(), 0.0);
  for_each_conv_term(cp, [&](size_t yi, size_t xi, size_t wi) {
    (*dx)[xi] += g[yi] * w[wi];
    (*dw)[wi] += g[yi] * x[xi];
  });
}

// ---- Pooling ------------------------------------------------------------------------------------

int64_t ref_pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
                          int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = (ceil_mode ? -floor_div(-span, stride) : floor_div(span, stride)) + 1;
  // torch: the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

int64_t PoolProblem::p() const {
  return ref_pool_out_size(h, kernel_h, stride_h, pad_h, ceil_mode, dilation_h);
}
int64_t PoolProblem::q() const {
  return ref_pool_out_size(w, kernel_w, stride_w, pad_w, ceil_mode, dilation_w);
}
Dims PoolProblem::x_dims() const { return nchw_dims(rank3, n, c, h, w); }
Dims PoolProblem::y_dims() const { return nchw_dims(rank3, n, c, p(), q()); }
std::vector<int64_t> PoolProblem::iattrs(bool with_count_include_pad) const {
  std::vector<int64_t> a = {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode};
  if (with_count_include_pad) a.push_back(count_include_pad);
  if (dilation_h != 1 || dilation_w != 1) a.insert(a.end(), {dilation_h, dilation_w});
  return a;
}

const std::vector<PoolProblem>& pool_problems() {
  // name, rank3, n, c, h, w, kernel h w, stride h w, pad h w (ceil_mode, count_include_pad 0).
  // clang-format off
  static const std::vector<PoolProblem> problems = {
      {"3x3 stride 2 padding 1", false, 2, 2, 6, 7, 3, 3, 2, 2, 1, 1, false, false},
      {"3x2 stride 2 padding (0, 1)", false, 1, 3, 6, 6, 3, 2, 2, 2, 0, 1, false, false},
      {"2x2 stride 2 padding 1", false, 2, 2, 5, 5, 2, 2, 2, 2, 1, 1, false, false},
      {"3x3 stride 1 padding 1", false, 1, 2, 5, 4, 3, 3, 1, 1, 1, 1, false, false},
      {"2x2 stride 2 on odd sizes", false, 2, 2, 5, 7, 2, 2, 2, 2, 0, 0, false, false},
      {"2x2 stride 3 padding (0, 1)", false, 1, 2, 10, 4, 2, 2, 3, 3, 0, 1, false, false},
      {"pool1d 3 stride 2 padding 1", true, 2, 3, 1, 10, 1, 3, 1, 2, 0, 1, false, false},
      {"3x1 stride (2, 1) padding (1, 0)", false, 1, 2, 7, 5, 3, 1, 2, 1, 1, 0, false, false},
      {"one 16x10 window over a 16x10 map", false, 2, 3, 16, 10, 16, 10, 16, 10, 0, 0, false, false},
  };
  // clang-format on
  return problems;
}

const std::vector<PoolProblem>& max_pool_problems() {
  // As pool_problems(), then dilation h w.
  // clang-format off
  static const std::vector<PoolProblem> problems = [] {
    std::vector<PoolProblem> all = pool_problems();
    all.push_back({"3x3 dilation 2 padding 1", false, 2, 2, 9, 8, 3, 3, 1, 2, 1, 1, false, false, 2, 2});
    all.push_back({"2x3 dilation (3, 2) stride 2 padding 1", false, 1, 3, 10, 9, 2, 3, 2, 2, 1, 1, false, false, 3, 2});
    all.push_back({"pool1d 3 dilation 3 stride 2 padding 1", true, 2, 3, 1, 14, 1, 3, 1, 2, 0, 1, false, false, 1, 3});
    all.push_back({"4x2 dilation (1, 4) padding (2, 1)", false, 1, 2, 7, 11, 4, 2, 3, 1, 2, 1, false, false, 1, 4});
    return all;
  }();
  // clang-format on
  return problems;
}

Vec ref_max_pool(const PoolProblem& pp, const Vec& x) {
  const int64_t p = pp.p(), q = pp.q();
  Vec y(static_cast<size_t>(pp.n * pp.c * p * q));
  for (int64_t nc = 0; nc < pp.n * pp.c; ++nc) {
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        double best = -INFINITY;
        // The window's elements: kernel of them, dilation apart.
        for (int64_t a = 0; a < pp.kernel_h; ++a) {
          const int64_t ih = i * pp.stride_h - pp.pad_h + a * pp.dilation_h;
          for (int64_t b = 0; b < pp.kernel_w; ++b) {
            const int64_t iw = j * pp.stride_w - pp.pad_w + b * pp.dilation_w;
            if (ih < 0 || ih >= pp.h || iw < 0 || iw >= pp.w) continue;  // Padding never wins.
            const double v = x[static_cast<size_t>((nc * pp.h + ih) * pp.w + iw)];
            if (isnan(v) || v > best) best = v;
            if (isnan(best)) break;
          }
          if (isnan(best)) break;
        }
        y[static_cast<size_t>((nc * p + i) * q + j)] = best;
      }
    }
  }
  return y;
}

Vec ref_avg_pool(const PoolProblem& pp, const Vec& x) {
  const int64_t p = pp.p(), q = pp.q();
  Vec y(static_cast<size_t>(pp.n * pp.c * p * q));
  for (int64_t nc = 0; nc < pp.n * pp.c; ++nc) {
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        // torch's avg_pool2d: the window clipped to the padded input, then to the input.
        int64_t h0 = i * pp.stride_h - pp.pad_h, w0 = j * pp.stride_w - pp.pad_w;
        int64_t h1 = h0 + pp.kernel_h, w1 = w0 + pp.kernel_w;
        if (h1 > pp.h + pp.pad_h) h1 = pp.h + pp.pad_h;
        if (w1 > pp.w + pp.pad_w) w1 = pp.w + pp.pad_w;
        const int64_t padded = (h1 - h0) * (w1 - w0);
        if (h0 < 0) h0 = 0;
        if (w0 < 0) w0 = 0;
        if (h1 > pp.h) h1 = pp.h;
        if (w1 > pp.w) w1 = pp.w;
        double sum = 0.0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          for (int64_t iw = w0; iw < w1; ++iw)
            sum += x[static_cast<size_t>((nc * pp.h + ih) * pp.w + iw)];
        }
        const int64_t divisor = pp.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
        y[static_cast<size_t>((nc * p + i) * q + j)] = sum / static_cast<double>(divisor);
      }
    }
  }
  return y;
}

Vec ref_global_avg_pool(const Vec& x, int64_t n, int64_t c, int64_t spatial) {
  Vec y(static_cast<size_t>(n * c), 0.0);
  for (int64_t nc = 0; nc < n * c; ++nc) {
    double sum = 0.0;
    for (int64_t k = 0; k < spatial; ++k) sum += x[static_cast<size_t>(nc * spatial + k)];
    y[static_cast<size_t>(nc)] = sum / static_cast<double>(spatial);
  }
  return y;
}

// ---- Batch normalisation ------------------------------------------------------------------------

void ref_batch_norm(const Vec& x, const Vec& gamma, const Vec& beta, int64_t n, int64_t c,
                    int64_t spatial, double eps, Vec* y, Vec* mean, Vec* var) {
  const double m = static_cast<double>(n * spatial);
  y->assign(x.size(), 0.0);
  mean->assign(static_cast<size_t>(c), 0.0);
  var->assign(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0.0, sq = 0.0;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < spatial; ++k)
        sum += x[static_cast<size_t>((b * c + ch) * spatial + k)];
    }
    const double mu = sum / m;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < spatial; ++k) {
        const double d = x[static_cast<size_t>((b * c + ch) * spatial + k)] - mu;
        sq += d * d;
      }
    }
    const double v = sq / m, rstd = 1.0 / sqrt(v + eps);
    (*mean)[static_cast<size_t>(ch)] = mu;
    (*var)[static_cast<size_t>(ch)] = v;
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < spatial; ++k) {
        const size_t at = static_cast<size_t>((b * c + ch) * spatial + k);
        (*y)[at] =
            (x[at] - mu) * rstd * gamma[static_cast<size_t>(ch)] + beta[static_cast<size_t>(ch)];
      }
    }
  }
}

Vec ref_batch_norm_inference(const Vec& x, const Vec& gamma, const Vec& beta, const Vec& mean,
                             const Vec& var, int64_t n, int64_t c, int64_t spatial, double eps) {
  Vec y(x.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t k = static_cast<size_t>(ch);
      for (int64_t s = 0; s < spatial; ++s) {
        const size_t at = static_cast<size_t>((b * c + ch) * spatial + s);
        y[at] = (x[at] - mean[k]) / sqrt(var[k] + eps) * gamma[k] + beta[k];
      }
    }
  }
  return y;
}

// ---- Padding, concatenation, slicing ------------------------------------------------------------

Vec ref_pad(const Vec& x, int64_t n, int64_t c, int64_t h, int64_t w, int64_t top, int64_t bottom,
            int64_t left, int64_t right, double value) {
  const int64_t ph = h + top + bottom, pw = w + left + right;
  Vec y(static_cast<size_t>(n * c * ph * pw), value);
  for (int64_t nc = 0; nc < n * c; ++nc) {
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        y[static_cast<size_t>((nc * ph + i + top) * pw + j + left)] =
            x[static_cast<size_t>((nc * h + i) * w + j)];
      }
    }
  }
  return y;
}

namespace {

// The number of elements before |axis| (outer) and after it (inner) in |dims|.
void outer_inner(const Dims& dims, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (static_cast<int64_t>(k) < axis) *outer *= dims[k];
    if (static_cast<int64_t>(k) > axis) *inner *= dims[k];
  }
}

}  // namespace

Vec ref_concat(const std::vector<Vec>& parts, const std::vector<Dims>& dims, int64_t axis) {
  int64_t outer, inner, total = 0;
  outer_inner(dims[0], axis, &outer, &inner);
  for (const Dims& d : dims) total += d[static_cast<size_t>(axis)];
  Vec y(static_cast<size_t>(outer * total * inner));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t base = 0;
    for (size_t t = 0; t < parts.size(); ++t) {
      const int64_t len = dims[t][static_cast<size_t>(axis)];
      for (int64_t a = 0; a < len; ++a) {
        for (int64_t i = 0; i < inner; ++i) {
          y[static_cast<size_t>((o * total + base + a) * inner + i)] =
              parts[t][static_cast<size_t>((o * len + a) * inner + i)];
        }
      }
      base += len;
    }
  }
  return y;
}

Vec ref_slice(const Vec& x, const Dims& dims, int64_t axis, int64_t offset, int64_t length) {
  int64_t outer, inner;
  outer_inner(dims, axis, &outer, &inner);
  const int64_t n = dims[static_cast<size_t>(axis)];
  Vec y(static_cast<size_t>(outer * length * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t a = 0; a < length; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        y[static_cast<size_t>((o * length + a) * inner + i)] =
            x[static_cast<size_t>((o * n + offset + a) * inner + i)];
      }
    }
  }
  return y;
}

}  // namespace ops_test
