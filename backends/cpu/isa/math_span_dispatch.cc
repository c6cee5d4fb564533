// Which build of isa/math_span.h a call runs: the widest instruction set the CPU has.
#include "backends/cpu/isa/isa.h"
#include "backends/cpu/isa/math_span.h"

namespace remat {
namespace cpu {

void gelu_span(const float* x, float* y, int64_t n) { REMAT_CPU_BEST(gelu_span)(x, y, n); }

void gelu_grad_span(const float* dy, const float* x, float* dx, int64_t n) {
  REMAT_CPU_BEST(gelu_grad_span)(dy, x, dx, n);
}

void exp_shifted_span(const float* x, float shift, float* y, int64_t n) {
  REMAT_CPU_BEST(exp_shifted_span)(x, shift, y, n);
}

void column_sums_span(const float* dy, int64_t rows, int64_t ld, float* db, int64_t w) {
  REMAT_CPU_BEST(column_sums_span)(dy, rows, ld, db, w);
}

void column_sums_half_span(uint32_t dtype, const uint16_t* dy, int64_t rows, int64_t ld, float* db,
                           int64_t w) {
  REMAT_CPU_BEST(column_sums_half_span)(dtype, dy, rows, ld, db, w);
}

void adam_span(const AdamScalars& s, const float* param_in, const float* grad, const float* m_in,
               const float* v_in, float* param, float* m_out, float* v_out, int64_t n) {
  REMAT_CPU_BEST(adam_span)(s, param_in, grad, m_in, v_in, param, m_out, v_out, n);
}

}  // namespace cpu
}  // namespace remat
