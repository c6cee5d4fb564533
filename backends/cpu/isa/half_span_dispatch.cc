// Which build of isa/half_span.h a call runs: AVX-512 where the CPU has it, AVX2 where it has
// AVX2, FMA and F16C (that build converts binary16 with F16C), else the baseline.
#include "backends/cpu/isa/half_span.h"

#if REMAT_CPU_X86_VARIANTS
#include <cpuid.h>
#endif

#include "backends/cpu/isa/isa.h"

namespace remat {
namespace cpu {
#if REMAT_CPU_X86_VARIANTS
namespace {

// F16C: CPUID leaf 1, ECX bit 29. Asked of CPUID itself: clang's __builtin_cpu_supports does
// not know "f16c" (GCC's does).
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
}

CpuIsa half_span_isa() {
  const CpuIsa best = best_cpu_isa();
  if (best == CpuIsa::kAvx512) return best;
  if (best == CpuIsa::kAvx2 && cpu_has_f16c()) return best;
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

void widen_columns(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows, int64_t n, float* y,
                   int64_t ldy) {
#if REMAT_CPU_X86_VARIANTS
  switch (half_span_isa()) {
    case CpuIsa::kAvx512: return widen_columns_avx512(dtype, x, ld, rows, n, y, ldy);
    case CpuIsa::kAvx2: return widen_columns_avx2(dtype, x, ld, rows, n, y, ldy);
    case CpuIsa::kBaseline: break;
  }
#endif
  widen_columns_baseline(dtype, x, ld, rows, n, y, ldy);
}

}  // namespace cpu
}  // namespace remat
