// The padded copies of conv/padded.h.
#include "backends/cpu/conv/padded.h"

#include <string.h>

#include "backends/cpu/gemm/gemm.h"

namespace remat {
namespace cpu {

PaddedSpan padded_span(const ConvShape& c) {
  PaddedSpan ps{};
  ps.wp = c.x.w + 2 * c.a.pad_w;
  ps.span = (c.p - 1) * ps.wp + c.q;
  ps.reach = (c.r - 1) * c.a.dilation_h * ps.wp + (c.s - 1) * c.a.dilation_w;
  // Scratch per chunk of n columns: the padded image's part the chunk reads, cg * (n + reach +
  // slack) floats, then the product's chunk, kg * n floats.
  const int64_t free = kGemmPackFloats - kGemmWalkFreeFrom;
  const int64_t fixed = c.cg * (ps.reach + kGemmColumnSlack);
  if (c.a.stride_h != 1 || c.a.stride_w != 1 || fixed >= free) return ps;
  ps.chunk = (free - fixed) / (c.cg + c.kg) / kColumnGrain * kColumnGrain;
  return ps;
}

PaddedImages padded_images(const ConvShape& c, int64_t scratch_floats) {
  PaddedImages pi{};
  const int64_t sh = c.a.stride_h, sw = c.a.stride_w;
  pi.hp = c.p + (c.r - 1) * c.a.dilation_h / sh;
  pi.wp = c.q + (c.s - 1) * c.a.dilation_w / sw;
  pi.channel = sh * sw * pi.hp * pi.wp;
  pi.taps = c.cg * c.r * c.s;
  // The offsets, then 64-byte aligned copies.
  pi.copies_at = (pi.taps * static_cast<int64_t>(sizeof(int64_t) / sizeof(float)) + 15) / 16 * 16;
  const int64_t image = c.cg * pi.channel;
  if (c.q % kGemmImageGrain != 0 || image <= 0 || pi.copies_at + image > scratch_floats) return pi;
  pi.images = (scratch_floats - pi.copies_at) / image;
  return pi;
}

void fill_tap_offsets(const ConvShape& c, const PaddedImages& pi, int64_t* out) {
  const int64_t sh = c.a.stride_h, sw = c.a.stride_w, phase = pi.hp * pi.wp;
  for (int64_t ci = 0; ci < c.cg; ++ci) {
    for (int64_t r = 0; r < c.r; ++r) {
      const int64_t dy = r * c.a.dilation_h;
      for (int64_t s = 0; s < c.s; ++s) {
        const int64_t dx = s * c.a.dilation_w;
        *out++ = ci * pi.channel + (dy % sh * sw + dx % sw) * phase + dy / sh * pi.wp + dx / sw;
      }
    }
  }
}

void copy_phases(const ConvShape& c, const PaddedImages& pi, const float* plane, float* out) {
  const int64_t sh = c.a.stride_h, sw = c.a.stride_w;
  if (sh == 1 && sw == 1) {  // one phase, the padded image
    copy_padded_channel(c, pi.wp, plane, 0, pi.hp * pi.wp, out);
    return;
  }
  const int64_t phase = pi.hp * pi.wp;
  for (int64_t a = 0; a < sh; ++a) {
    // Whether a tap reads phase row a (then column b below).
    bool row_read = false;
    for (int64_t r = 0; r < c.r; ++r) row_read |= r * c.a.dilation_h % sh == a;
    if (!row_read) continue;
    for (int64_t b = 0; b < sw; ++b) {
      bool read = false;
      for (int64_t s = 0; s < c.s; ++s) read |= s * c.a.dilation_w % sw == b;
      if (!read) continue;
      // Phase columns [lo, hi) lie inside the image: input column j * sw + b - pad_w.
      const int64_t first = b - c.a.pad_w;
      int64_t lo = first >= 0 ? 0 : (-first + sw - 1) / sw;
      int64_t hi = c.x.w - first <= 0 ? 0 : (c.x.w - first + sw - 1) / sw;
      if (hi > pi.wp) hi = pi.wp;
      if (lo > hi) lo = hi;
      float* to = out + (a * sw + b) * phase;
      for (int64_t i = 0; i < pi.hp; ++i, to += pi.wp) {
        const int64_t iy = i * sh + a - c.a.pad_h;
        if (iy < 0 || iy >= c.x.h) {
          memset(to, 0, static_cast<size_t>(pi.wp) * sizeof(float));
          continue;
        }
        const float* from = plane + iy * c.x.w + first;
        for (int64_t j = 0; j < lo; ++j) to[j] = 0.0f;
        if (sw == 2) {  // the common stride, a constant the compiler vectorizes
          for (int64_t j = lo; j < hi; ++j) to[j] = from[2 * j];
        } else {
          for (int64_t j = lo; j < hi; ++j) to[j] = from[j * sw];
        }
        for (int64_t j = hi; j < pi.wp; ++j) to[j] = 0.0f;
      }
    }
  }
}

// One memset of the whole range, then a memcpy per input row: a call per short run of padding
// costs more than writing it twice.
void copy_padded_channel(const ConvShape& c, int64_t wp, const float* plane, int64_t first,
                         int64_t len, float* out) {
  memset(out, 0, static_cast<size_t>(len) * sizeof(float));
  for (int64_t pos = first, end = first + len; pos < end;) {
    const int64_t yy = pos / wp, xx = pos % wp;
    const int64_t run = wp - xx < end - pos ? wp - xx : end - pos;
    const int64_t iy = yy - c.a.pad_h;
    if (iy >= 0 && iy < c.x.h) {
      // Padded columns [xx, xx + run) are input columns [x0, x0 + run); [lo, hi) lie inside.
      const int64_t x0 = xx - c.a.pad_w;
      const int64_t lo = x0 > 0 ? x0 : 0;
      const int64_t hi = x0 + run < c.x.w ? x0 + run : c.x.w;
      if (hi > lo) {
        memcpy(out + (pos - first) + (lo - x0), plane + iy * c.x.w + lo,
               static_cast<size_t>(hi - lo) * sizeof(float));
      }
    }
    pos += run;
  }
}

void copy_padded(const ConvShape& c, int64_t wp, const float* x_g, int64_t first, int64_t len,
                 float* dst) {
  for (int64_t ci = 0; ci < c.cg; ++ci)
    copy_padded_channel(c, wp, x_g + ci * c.x.h * c.x.w, first, len, dst + ci * len);
}

}  // namespace cpu
}  // namespace remat
