// The padded copies of conv_padded.h.
#include "backends/cpu/conv_padded.h"

#include <string.h>

#include "backends/cpu/gemm.h"

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

PaddedImages padded_images(const ConvShape& c) {
  PaddedImages pi{};
  pi.hp = c.x.h + 2 * c.a.pad_h;
  pi.wp = c.x.w + 2 * c.a.pad_w;
  const int64_t free = kGemmPackFloats - kGemmWalkFreeFrom, image = c.cg * pi.hp * pi.wp;
  if (c.a.stride_h != 1 || c.a.stride_w != 1 || c.q % kGemmImageGrain != 0 || image <= 0 || image > free) return pi;
  pi.images = free / image;
  return pi;
}

// One memset of the whole range, then a memcpy per input row: a call per short run of padding
// costs more than writing it twice.
void copy_padded_channel(const ConvShape& c, int64_t wp, const float* plane, int64_t first, int64_t len, float* out) {
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
        memcpy(out + (pos - first) + (lo - x0), plane + iy * c.x.w + lo, static_cast<size_t>(hi - lo) * sizeof(float));
      }
    }
    pos += run;
  }
}

void copy_padded(const ConvShape& c, int64_t wp, const float* x_g, int64_t first, int64_t len, float* dst) {
  for (int64_t ci = 0; ci < c.cg; ++ci) copy_padded_channel(c, wp, x_g + ci * c.x.h * c.x.w, first, len, dst + ci * len);
}

}  // namespace cpu
}  // namespace remat
