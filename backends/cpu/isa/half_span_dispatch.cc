// Which build of isa/half_span.h a call runs: AVX-512 where the CPU has it, AVX2 where it has
// AVX2, FMA and F16C (that build converts binary16 with F16C), else the baseline.
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/isa.h"

namespace remat {
namespace cpu {
#if REMAT_CPU_X86_VARIANTS
namespace {

CpuIsa half_span_isa() {
  const CpuIsa best = best_cpu_isa();
  if (best == CpuIsa::kAvx512) return best;
  if (best == CpuIsa::kAvx2 && __builtin_cpu_supports("f16c")) return best;
  return CpuIsa::kBaseline;
}

}  // namespace
#endif

void widen_span(uint32_t dtype, const uint16_t* x, float* y, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (half_span_isa()) {
    case CpuIsa::kAvx512: return widen_span_avx512(dtype, x, y, n);
    case CpuIsa::kAvx2: return widen_span_avx2(dtype, x, y, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  widen_span_baseline(dtype, x, y, n);
}

void narrow_span(uint32_t dtype, const float* x, uint16_t* y, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (half_span_isa()) {
    case CpuIsa::kAvx512: return narrow_span_avx512(dtype, x, y, n);
    case CpuIsa::kAvx2: return narrow_span_avx2(dtype, x, y, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  narrow_span_baseline(dtype, x, y, n);
}

}  // namespace cpu
}  // namespace remat
