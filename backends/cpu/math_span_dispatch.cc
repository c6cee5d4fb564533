// Which build of math_span.h a call runs: the widest instruction set the CPU has.
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/math_span.h"

namespace remat {
namespace cpu {

void gelu_span(const float* x, float* y, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return gelu_span_avx512(x, y, n);
    case CpuIsa::kAvx2: return gelu_span_avx2(x, y, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  gelu_span_baseline(x, y, n);
}

void gelu_grad_span(const float* dy, const float* x, float* dx, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return gelu_grad_span_avx512(dy, x, dx, n);
    case CpuIsa::kAvx2: return gelu_grad_span_avx2(dy, x, dx, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  gelu_grad_span_baseline(dy, x, dx, n);
}

void exp_shifted_span(const float* x, float shift, float* y, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return exp_shifted_span_avx512(x, shift, y, n);
    case CpuIsa::kAvx2: return exp_shifted_span_avx2(x, shift, y, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  exp_shifted_span_baseline(x, shift, y, n);
}

void adam_span(const AdamScalars& s, const float* param_in, const float* grad, const float* m_in, const float* v_in,
               float* param, float* m_out, float* v_out, int64_t n) {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return adam_span_avx512(s, param_in, grad, m_in, v_in, param, m_out, v_out, n);
    case CpuIsa::kAvx2: return adam_span_avx2(s, param_in, grad, m_in, v_in, param, m_out, v_out, n);
    case CpuIsa::kBaseline: break;
  }
#endif
  adam_span_baseline(s, param_in, grad, m_in, v_in, param, m_out, v_out, n);
}

}  // namespace cpu
}  // namespace remat
