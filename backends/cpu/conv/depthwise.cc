// The direct loops of depthwise convolutions (conv/depthwise.h).
#include "backends/cpu/conv/depthwise.h"

#include <string.h>

#include "backends/cpu/isa/lane_sum.h"

namespace remat {
namespace cpu {

void depthwise_forward(const ConvShape& c, const float* x, const float* w, int64_t k0, int64_t k1,
                       float* y) {
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

void depthwise_grad_input(const ConvShape& c, const float* dy, const float* w, int64_t c0,
                          int64_t c1, float* dx) {
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

void depthwise_grad_weight(const ConvShape& c, const float* dy, const float* x, int64_t k0,
                           int64_t k1, float* dw) {
  const int64_t pq = c.p * c.q;
  for (int64_t k = k0; k < k1; ++k) {
    for (int64_t r = 0; r < c.r; ++r) {
      for (int64_t s = 0; s < c.s; ++s) {
        Accum acc = 0;
        for (int64_t n = 0; n < c.x.n; ++n) {
          const float* plane = x + (n * c.x.c + k / c.kg) * c.x.h * c.x.w;
          const float* grad = dy + (n * c.k + k) * pq;
          for (int64_t p = 0; p < c.p; ++p) {
            const int64_t ih = in_row(c, p, r);
            if (ih < 0 || ih >= c.x.h) continue;
            for (int64_t q = 0; q < c.q; ++q) {
              const int64_t iw = in_col(c, q, s);
              if (iw >= 0 && iw < c.x.w)
                acc += static_cast<Accum>(grad[p * c.q + q]) * plane[ih * c.x.w + iw];
            }
          }
        }
        dw[(k * c.r + r) * c.s + s] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace cpu
}  // namespace remat
