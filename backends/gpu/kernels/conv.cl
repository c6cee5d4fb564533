// Convolutions of one group run as column matrices and the backend's GEMM (ops/conv.cc): a
// chunk of images' columns (conv_columns) times the filters, the input gradient's columns folded
// back (conv_columns_grad), the weight gradient from dy's rows (conv_grad_rows) times the
// columns. Grouped ones (depthwise) run as direct loops, one work item per output element: the
// forward op per element of y, the input gradient per element of dx (gathering the outputs that
// read it, so no two work items write one element), the weight gradient per filter tap (images
// and positions in order, as the CPU's depthwise loop). conv_grad_input's optional workspace
// output is the CPU kernel's and is left untouched here. The bias gradient channel_sum gives
// each channel a team of work items (common.cl).

// A convolution's sizes (ConvShape of plan/spatial_shape.h) as kernel parameters, in the order
// ops/conv.cc passes them: input [n, c, h, w], filters [k, cg, r, s], output [n, k, p, q],
// cg and kg the input and output channels of a group.
#define CONV_SHAPE_PARAMS                                                                      \
  long n, long c, long h, long w, long k, long cg, long kg, long r, long s, long p, long q,    \
      long stride_h, long stride_w, long pad_h, long pad_w, long dil_h, long dil_w

// The column matrix of |nb| images of x (one group: c channels), [c r s, nb p q]:
// cols[(ci r + fr) s + fs, (b p + i) q + j] = x[b, ci, ih, iw] at the tap's input position
// (ih, iw), 0 in the padding.
KERNEL conv_columns(buf_t x, ulong xo, buf_t cols, ulong co, long nb, CONV_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(c * r * s * nb * p * q)) return;
  long rest = (long)gid;
  const long j = rest % q;
  rest /= q;
  const long i = rest % p;
  rest /= p;
  const long b = rest % nb;
  rest /= nb;
  const long fs = rest % s;
  rest /= s;
  const long fr = rest % r, ci = rest / r;
  const long ih = i * stride_h - pad_h + fr * dil_h, iw = j * stride_w - pad_w + fs * dil_w;
  const bool inside = ih >= 0 && ih < h && iw >= 0 && iw < w;
  F32(cols, co)[gid] = inside ? F32(x, xo)[((b * c + ci) * h + ih) * w + iw] : 0.0f;
}

// dx of |nb| images from their columns' gradient dcols ([c r s, nb p q], conv_columns'
// layout): dx[b, ci, ih, iw] = the sum over the taps (fr, fs) whose output position (i, j) reads
// it of dcols[(ci r + fr) s + fs, (b p + i) q + j], taps in order.
KERNEL conv_columns_grad(buf_t dcols, ulong co, buf_t dx, ulong dxo, long nb, CONV_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(nb * c * h * w)) return;
  long rest = (long)gid;
  const long iw = rest % w;
  rest /= w;
  const long ih = rest % h;
  rest /= h;
  const long ci = rest % c, b = rest / c;
  const long columns = nb * p * q;
  GLOBAL const float* g = F32(dcols, co) + b * p * q;
  float acc = 0.0f;
  for (long fr = 0; fr < r; ++fr) {
    const long th = ih + pad_h - fr * dil_h;
    if (th < 0 || th % stride_h != 0 || th / stride_h >= p) continue;
    for (long fs = 0; fs < s; ++fs) {
      const long tw = iw + pad_w - fs * dil_w;
      if (tw < 0 || tw % stride_w != 0 || tw / stride_w >= q) continue;
      acc += g[((ci * r + fr) * s + fs) * columns + (th / stride_h) * q + tw / stride_w];
    }
  }
  F32(dx, dxo)[gid] = acc;
}

// dy's rows of |nb| images side by side, [k, nb pq]: rows[o, b pq + t] = dy[b, o, t], the A of
// the weight gradient's product with the columns.
KERNEL conv_grad_rows(buf_t dy, ulong dyo, buf_t rows, ulong ro, long nb, long k, long pq) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(k * nb * pq)) return;
  const long t = (long)(gid % (ulong)pq), rest = (long)(gid / (ulong)pq);
  const long b = rest % nb, o = rest / nb;
  F32(rows, ro)[gid] = F32(dy, dyo)[(b * k + o) * pq + t];
}

// y[b, o, t] += bias[o] over |count| elements of y ([n, k, pq]).
KERNEL conv_bias(buf_t y, ulong yo, buf_t bias, ulong bo, long k, long pq, ulong count) {
  const ulong gid = GLOBAL_ID();
  if (gid >= count) return;
  F32(y, yo)[gid] += F32(bias, bo)[(long)(gid / (ulong)pq) % k];
}

// y[b, o, i, j] = sum over the group's channels and taps of w * x (+ bias[o]); the sum in
// float, taps in (channel, row, column) order: the CPU's GEMM also sums K in float.
KERNEL conv(buf_t x, ulong xo, buf_t wt, ulong wo, buf_t bias, ulong bo, int has_bias, buf_t y,
            ulong yo, CONV_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(n * k * p * q)) return;
  long rest = (long)gid;
  const long j = rest % q;
  rest /= q;
  const long i = rest % p;
  rest /= p;
  const long o = rest % k, b = rest / k;
  GLOBAL const float* xg = F32(x, xo) + (b * c + (o / kg) * cg) * h * w;
  GLOBAL const float* wk = F32(wt, wo) + o * cg * r * s;
  float acc = 0.0f;
  for (long ci = 0; ci < cg; ++ci) {
    for (long fr = 0; fr < r; ++fr) {
      const long ih = i * stride_h - pad_h + fr * dil_h;
      if (ih < 0 || ih >= h) continue;
      for (long fs = 0; fs < s; ++fs) {
        const long iw = j * stride_w - pad_w + fs * dil_w;
        if (iw >= 0 && iw < w) acc += wk[(ci * r + fr) * s + fs] * xg[(ci * h + ih) * w + iw];
      }
    }
  }
  if (has_bias) acc += F32(bias, bo)[o];
  F32(y, yo)[gid] = acc;
}

// dx[b, ch, ih, iw] = sum over the group's filters o and the taps (fr, fs) whose output
// position (i, j) reads x[b, ch, ih, iw] of w[o, ch % cg, fr, fs] * dy[b, o, i, j].
KERNEL conv_grad_input(buf_t dy, ulong dyo, buf_t wt, ulong wo, buf_t dx, ulong dxo,
                       CONV_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(n * c * h * w)) return;
  long rest = (long)gid;
  const long iw = rest % w;
  rest /= w;
  const long ih = rest % h;
  rest /= h;
  const long ch = rest % c, b = rest / c;
  const long g = ch / cg, ci = ch % cg;
  float acc = 0.0f;
  for (long o = g * kg; o < (g + 1) * kg; ++o) {
    GLOBAL const float* wk = F32(wt, wo) + (o * cg + ci) * r * s;
    GLOBAL const float* grad = F32(dy, dyo) + (b * k + o) * p * q;
    for (long fr = 0; fr < r; ++fr) {
      const long th = ih + pad_h - fr * dil_h;
      if (th < 0 || th % stride_h != 0 || th / stride_h >= p) continue;
      for (long fs = 0; fs < s; ++fs) {
        const long tw = iw + pad_w - fs * dil_w;
        if (tw < 0 || tw % stride_w != 0 || tw / stride_w >= q) continue;
        acc += wk[fr * s + fs] * grad[(th / stride_h) * q + tw / stride_w];
      }
    }
  }
  F32(dx, dxo)[gid] = acc;
}

// dw[o, ci, fr, fs] = sum over images b and output positions (i, j) of dy[b, o, i, j] *
// x[b, group channel ci, tap position], in acc_t, images then positions in order; added to dw
// where |accumulate| (a batch chunk after the first: ops/widening.h).
KERNEL conv_grad_weight(buf_t dy, ulong dyo, buf_t x, ulong xo, buf_t dw, ulong dwo, int accumulate,
                        CONV_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(k * cg * r * s)) return;
  long rest = (long)gid;
  const long fs = rest % s;
  rest /= s;
  const long fr = rest % r;
  rest /= r;
  const long ci = rest % cg, o = rest / cg;
  const long ch = (o / kg) * cg + ci;
  acc_t acc = 0;
  for (long b = 0; b < n; ++b) {
    GLOBAL const float* plane = F32(x, xo) + (b * c + ch) * h * w;
    GLOBAL const float* grad = F32(dy, dyo) + (b * k + o) * p * q;
    for (long i = 0; i < p; ++i) {
      const long ih = i * stride_h - pad_h + fr * dil_h;
      if (ih < 0 || ih >= h) continue;
      for (long j = 0; j < q; ++j) {
        const long iw = j * stride_w - pad_w + fs * dil_w;
        if (iw >= 0 && iw < w) acc += (acc_t)grad[i * q + j] * plane[ih * w + iw];
      }
    }
  }
  GLOBAL float* out = F32(dw, dwo) + gid;
  *out = accumulate != 0 ? *out + (float)acc : (float)acc;
}

// db[ch] = sum of dy[b, ch, ...] over images and positions: a team per channel (common.cl's
// channel teams), float sums in the team's tree order, added to db where |accumulate|. |inner|
// is the spatial size.
KERNEL channel_sum(buf_t dy, ulong dyo, buf_t db, ulong dbo, int accumulate, ulong images,
                   ulong channels, ulong inner, uint team, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong ch = team_row(team);
  const uint lane = team_lane(team);
  const bool live = ch < channels;
  const ulong count = images * inner;
  GLOBAL const float* x = F32(dy, dyo);
  ChannelWalk w = channel_walk(live ? ch : 0, channels, inner, lane, team);
  float acc = 0.0f;
  for (ulong p = lane; live && p < count; p += team) {
    acc += x[w.at];
    channel_next(&w);
  }
  acc = team_sum(scratch, acc, team);
  if (live && lane == 0) F32(db, dbo)[ch] = accumulate != 0 ? F32(db, dbo)[ch] + acc : acc;
}
