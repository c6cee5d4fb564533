// The weight gradient of conv/weight_span.h.
#include "backends/cpu/conv/weight_span.h"

#include <string.h>

#include "backends/cpu/conv/padded.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {
namespace {

// A unit-stride weight gradient as dot products (dot_gemm) over the images' zero-padded
// planes laid end to end, the "image span": column j is padded position (yy, xx) = (pos / Wp,
// pos % Wp), pos = j % (Hp * Wp), of image j / (Hp * Wp); it is output (yy, xx) where yy < P and
// xx < Q, and tap (ci, r, s) of it lies at column j + r * dilation_h * Wp + s * dilation_w of
// channel ci's padded copy. dw[k, tap] sums dy's row k times that tap's row over the columns
// that are outputs; both rows run along the span, so neither is packed, where the im2col
// product packs every tap of every position transposed.
struct ImageSpan {
  int64_t plane;  // padded positions per image, Hp * Wp
  int64_t total;  // columns, N * plane
  int64_t chunk;  // columns a thread takes at a time, a multiple of kGemmDotLanes; 0: does not fit
};

ImageSpan image_span(const ConvShape& c, const PaddedSpan& ps) {
  ImageSpan is{};
  is.plane = (c.x.h + 2 * c.a.pad_h) * ps.wp;
  is.total = c.x.n * is.plane;
  // Scratch per chunk of n columns: keep (n), dy's rows (kg * n), every padded channel of the
  // group (cg * (n + reach)). Counting every channel, not the thread's, keeps the chunks, and
  // so the order of each sum, the same whatever the thread count.
  const int64_t fixed = c.cg * ps.reach;
  if (c.a.stride_h != 1 || c.a.stride_w != 1 || fixed >= kGemmPackFloats) return is;
  const int64_t chunk =
      (kGemmPackFloats - fixed) / (1 + c.kg + c.cg) / kGemmDotLanes * kGemmDotLanes;
  const int64_t whole = (is.total + kGemmDotLanes - 1) / kGemmDotLanes * kGemmDotLanes;
  is.chunk = chunk < whole ? chunk : whole;
  return is;
}

// Calls run(offset, len, kept, n, yy, xx) for each padded row's part of image span columns
// [first, first + len): |len| columns from column first + offset, which is padded position
// (yy, xx) of image n (n >= N past the last image), the first |kept| of them outputs.
template <typename Run>
void for_span_runs(const ConvShape& c, const PaddedSpan& ps, const ImageSpan& is, int64_t first,
                   int64_t len, const Run& run) {
  for (int64_t j = first, end = first + len; j < end;) {
    const int64_t n = j / is.plane, pos = j % is.plane, yy = pos / ps.wp, xx = pos % ps.wp;
    const int64_t part = ps.wp - xx < end - j ? ps.wp - xx : end - j;
    int64_t kept = 0;
    if (n < c.x.n && yy < c.p && xx < c.q) kept = c.q - xx < part ? c.q - xx : part;
    run(j - first, part, kept, n, yy, xx);
    j += part;
  }
}

// Image span columns [first, first + cols) of one group, in a thread's scratch: keep (-1 where
// a column is an output), dy's rows (0 elsewhere), both to |rounded| columns, and the padded
// copies of input channels [ci0, ci1) to |rounded| + reach.
void fill_image_span(const ConvShape& c, const PaddedSpan& ps, const ImageSpan& is, int64_t first,
                     int64_t cols, int64_t rounded, const float* dy_g, const float* x_g,
                     int64_t ci0, int64_t ci1, int32_t* keep, float* rows, float* padded) {
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, len = rounded + ps.reach;
  // Zeroed whole, then each run of outputs written: past |cols| too, dy is 0, for the next
  // chunk's outputs may be inf, and 0 * inf is NaN.
  memset(keep, 0, static_cast<size_t>(rounded) * sizeof(int32_t));
  memset(rows, 0, static_cast<size_t>(c.kg * rounded) * sizeof(float));
  for_span_runs(c, ps, is, first, rounded,
                [&](int64_t o, int64_t, int64_t kept, int64_t n, int64_t yy, int64_t xx) {
                  if (o + kept > cols) kept = cols - o > 0 ? cols - o : 0;
                  if (kept == 0) return;
                  for (int64_t i = 0; i < kept; ++i) keep[o + i] = -1;
                  const float* from = dy_g + n * c.k * pq + yy * c.q + xx;
                  for (int64_t k = 0; k < c.kg; ++k) {
                    memcpy(rows + k * rounded + o, from + k * pq,
                           static_cast<size_t>(kept) * sizeof(float));
                  }
                });
  for (int64_t ci = ci0; ci < ci1; ++ci) {
    float* out = padded + (ci - ci0) * len;
    for (int64_t j = first, end = first + len; j < end;) {
      const int64_t n = j / is.plane, pos = j % is.plane;
      const int64_t part = is.plane - pos < end - j ? is.plane - pos : end - j;
      if (n < c.x.n) {
        copy_padded_channel(c, ps.wp, x_g + (n * c.x.c + ci) * hw, pos, part, out + (j - first));
      } else {
        memset(out + (j - first), 0, static_cast<size_t>(part) * sizeof(float));
      }
      j += part;
    }
  }
}

// The images of a weight gradient that dot_gemm's images mode reads at a time: every padded
// input channel of the group for each (counting every channel, not a thread's, keeps the chunks,
// and so the order of each sum, the same whatever the thread count); 0 where the mode does not
// apply (Q not a multiple of kGemmImageGrain, P * Q of kGemmDotLanes, or one image does not
// fit).
int64_t images_per_chunk(const ConvShape& c, const PaddedImages& pi) {
  return c.p * c.q % kGemmDotLanes == 0 ? pi.images : 0;
}

// The dot product of a thread that owns filter taps [j0, j1) of |c|, whose padded copies start
// at input channel ci0: dw_g's columns j0 on, dy_g's rows by those taps' rows.
GemmDot thread_dot(const ConvShape& c, int64_t j0, int64_t j1, int64_t ci0) {
  GemmDot d{};
  d.m = c.kg;
  d.n = j1 - j0;
  d.b_row0 = j0 - ci0 * c.r * c.s;
  d.ldc = c.cg * c.r * c.s;
  return d;
}

}  // namespace

bool conv_grad_weight_over_images(const KernelArgs& args, const ConvShape& c, const float* dy,
                                  const float* x, float* dw) {
  const PaddedImages pi = padded_images(c, kGemmPackFloats);
  const int64_t chunk = images_per_chunk(c, pi);
  if (chunk == 0) return false;
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, rs = c.r * c.s, crs = c.cg * rs;
  // Each thread owns whole input channels [ci0, ci1), their filter taps [j0, j1) (columns of
  // dw_g); for each chunk of images, in order, dw_g (+)= dy_g's rows . the taps' rows, read in
  // place from dy and from the thread's padded copies of its channels.
  parallel_for(args, crs, rs, [&](int64_t j0, int64_t j1, uint32_t worker) {
    const int64_t ci0 = j0 / rs, ci1 = (j1 + rs - 1) / rs;
    float* scratch = gemm_pack(args, worker);
    // The offsets of taps from channel 0 of a copy hold for the thread's channels from ci0 on.
    int64_t* taps = reinterpret_cast<int64_t*>(scratch);
    fill_tap_offsets(c, pi, taps);
    float* copies = scratch + pi.copies_at;
    GemmDot d = thread_dot(c, j0, j1, ci0);
    d.lda = pq;
    d.b = copies;
    for (int64_t first = 0; first < c.x.n; first += chunk) {
      const int64_t count = c.x.n - first < chunk ? c.x.n - first : chunk;
      d.images = {count, c.p, c.q, pi.wp, c.k * pq, (ci1 - ci0) * pi.channel, taps};
      for (int64_t g = 0; g < c.a.groups; ++g) {
        for (int64_t n = first; n < first + count; ++n) {
          for (int64_t ci = ci0; ci < ci1; ++ci) {
            copy_phases(c, pi, x + (n * c.x.c + g * c.cg + ci) * hw,
                        copies + ((n - first) * (ci1 - ci0) + ci - ci0) * pi.channel);
          }
        }
        d.a = dy + (first * c.k + g * c.kg) * pq;
        d.c = dw + g * c.kg * crs + j0;
        d.accumulate = first > 0;
        dot_gemm(d);
      }
    }
  });
  return true;
}

bool conv_grad_weight_over_image_span(const KernelArgs& args, const ConvShape& c, const float* dy,
                                      const float* x, float* dw) {
  const PaddedSpan ps = padded_span(c);
  const ImageSpan is = image_span(c, ps);
  if (is.chunk == 0) return false;
  const int64_t pq = c.p * c.q, hw = c.x.h * c.x.w, rs = c.r * c.s, crs = c.cg * rs;
  // Each thread owns whole input channels, their filter taps [j0, j1) (columns of
  // dw_g); for each chunk of the image span, in order, dw_g (+)= dy_g's rows . the taps' rows.
  parallel_for(args, crs, rs, [&](int64_t j0, int64_t j1, uint32_t worker) {
    const int64_t ci0 = j0 / rs, ci1 = (j1 + rs - 1) / rs;
    float* scratch = gemm_pack(args, worker);
    int32_t* keep = reinterpret_cast<int32_t*>(scratch);
    float* rows = scratch + is.chunk;
    float* padded = rows + c.kg * is.chunk;
    GemmDot d = thread_dot(c, j0, j1, ci0);
    d.a = rows;
    d.b = padded;
    d.keep = keep;
    for (int64_t first = 0; first < is.total; first += is.chunk) {
      const int64_t cols = is.total - first < is.chunk ? is.total - first : is.chunk;
      const int64_t rounded = (cols + kGemmDotLanes - 1) / kGemmDotLanes * kGemmDotLanes;
      for (int64_t g = 0; g < c.a.groups; ++g) {
        fill_image_span(c, ps, is, first, cols, rounded, dy + g * c.kg * pq, x + g * c.cg * hw, ci0,
                        ci1, keep, rows, padded);
        d.k = cols;
        d.lda = rounded;
        d.b_walk = {c.s, c.r, c.a.dilation_w, c.a.dilation_h * ps.wp, rounded + ps.reach};
        d.c = dw + g * c.kg * crs + j0;
        d.accumulate = first > 0;
        dot_gemm(d);
      }
    }
  });
  return true;
}

}  // namespace cpu
}  // namespace remat
