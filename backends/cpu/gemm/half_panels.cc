// The packed engine's panels from 16-bit operands (half_panels.h).
#include "backends/cpu/gemm/half_panels.h"

#include <string.h>

#include "backends/cpu/isa/half_span.h"

namespace remat {
namespace cpu {
namespace {

// The longest run of x the packer widens at once: a block's X (gemm.h's blocks).
constexpr int64_t kLongestRun = kGemmNc > kGemmMc ? kGemmNc : kGemmMc;

// GemmPacker::pack for a HalfOperand: op(M)[k0:k0+kc, x0:x0+xc] as panels of |panel| along x,
// each k-major and the last zero-padded (gemm.h).
void pack_half(const void* context, int64_t k0, int64_t kc, int64_t x0, int64_t xc, int64_t panel,
               float* dst) {
  const HalfOperand& m = *static_cast<const HalfOperand*>(context);
  const int64_t panels = (xc + panel - 1) / panel;
  if (xc % panel != 0) {  // the last panel's columns past xc are zero
    memset(dst + (panels - 1) * kc * panel, 0, static_cast<size_t>(kc * panel) * sizeof(float));
  }
  if (m.k_contiguous) {
    // Each panel's runs of k widened down its columns, a block of them at a time.
    for (int64_t x = 0; x < xc; x += panel) {
      const int64_t width = xc - x < panel ? xc - x : panel;
      widen_columns(m.dtype, m.data + (x0 + x) * m.ld + k0, m.ld, width, kc,
                    dst + x / panel * kc * panel, panel);
    }
    return;
  }
  // One widened run of x per k, copied into each panel's row k.
  float run[kLongestRun];
  for (int64_t p = 0; p < kc; ++p) {
    widen_span(m.dtype, m.data + (k0 + p) * m.ld + x0, run, xc);
    for (int64_t x = 0; x < xc; x += panel) {
      const int64_t width = xc - x < panel ? xc - x : panel;
      memcpy(dst + x / panel * kc * panel + p * panel, run + x,
             static_cast<size_t>(width) * sizeof(float));
    }
  }
}

}  // namespace

GemmPacker half_packer(const HalfOperand* operand) { return {pack_half, operand}; }

}  // namespace cpu
}  // namespace remat
