// Elementwise math over a span of floats, compiled once per instruction set (isa/math_span.cc;
// isa/isa.h): GELU, its gradient, softmax's exponentials, the Adam update and the column sums of
// bias gradients. The AVX2 and AVX-512 builds take
// erf and exp from glibc's vector math library (libmvec) eight or sixteen lanes at a time, where
// the scalar erff and expf were 13% of a transformer's step. The kernels cut the elements over
// the threads; the functions without a suffix (isa/math_span_dispatch.cc) call the build the CPU
// runs best.
#ifndef REMAT_BACKENDS_CPU_ISA_MATH_SPAN_H_
#define REMAT_BACKENDS_CPU_ISA_MATH_SPAN_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// y = 0.5 x (1 + erf(x / sqrt(2))) for |n| elements. Every element takes the same path wherever
/// it sits in the span (a short last vector is padded), so the bits do not depend on how the
/// elements are cut over threads.
void gelu_span(const float* x, float* y, int64_t n);

/// dx = dy (cdf(x) + x pdf(x)) for |n| elements, the same way.
void gelu_grad_span(const float* dy, const float* x, float* dx, int64_t n);

/// y = exp(x - shift) for |n| elements, the same way (softmax's exponentials).
void exp_shifted_span(const float* x, float shift, float* y, int64_t n);

/// The scalars of one Adam / AdamW update (ops/optim.cc derives them as torch does).
struct AdamScalars {
  float b1, b2, one_minus_b1, one_minus_b2;
  float step_size;   ///< lr / (1 - b1^t)
  float bias2_sqrt;  ///< sqrt(1 - b2^t)
  float eps;
  float wd;     ///< coupled weight decay: g += wd * p
  float decay;  ///< decoupled (AdamW): p *= decay
  bool decoupled;
};

/// Adam over |n| elements: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, param = p - step_size
/// m / (sqrt(v) / bias2_sqrt + eps), each operation rounded as written (the same bits in every
/// build). Outputs may be the inputs (in place), element for element.
void adam_span(const AdamScalars& s, const float* param_in, const float* grad, const float* m_in,
               const float* v_in, float* param, float* m_out, float* v_out, int64_t n);

/// Columns most column_sums_span() sums in one call.
constexpr int64_t kColumnSumsWidth = 256;

/// db[j] = sum over r of dy[r * ld + j], j < |w| <= kColumnSumsWidth, each column summed in
/// double (Accum, isa/lane_sum.h) in row order and rounded once: the same bits in every build
/// (reduce_leading's columns; wider vectors only sum more columns at a time).
void column_sums_span(const float* dy, int64_t rows, int64_t ld, float* db, int64_t w);

/// column_sums_span() of 16-bit floats of |dtype| (REMAT_DTYPE_F16 or REMAT_DTYPE_BF16): each row
/// widened (isa/half_span.h) as it is read, so the bits are those of column_sums_span() over the
/// widened tensor without the float32 copy of it.
void column_sums_half_span(uint32_t dtype, const uint16_t* dy, int64_t rows, int64_t ld, float* db,
                           int64_t w);

/// The builds for one instruction set; call only when the CPU has it.
void gelu_span_baseline(const float* x, float* y, int64_t n);
void gelu_span_avx2(const float* x, float* y, int64_t n);
void gelu_span_avx512(const float* x, float* y, int64_t n);
void gelu_grad_span_baseline(const float* dy, const float* x, float* dx, int64_t n);
void gelu_grad_span_avx2(const float* dy, const float* x, float* dx, int64_t n);
void gelu_grad_span_avx512(const float* dy, const float* x, float* dx, int64_t n);
void exp_shifted_span_baseline(const float* x, float shift, float* y, int64_t n);
void exp_shifted_span_avx2(const float* x, float shift, float* y, int64_t n);
void exp_shifted_span_avx512(const float* x, float shift, float* y, int64_t n);
void column_sums_span_baseline(const float* dy, int64_t rows, int64_t ld, float* db, int64_t w);
void column_sums_span_avx2(const float* dy, int64_t rows, int64_t ld, float* db, int64_t w);
void column_sums_span_avx512(const float* dy, int64_t rows, int64_t ld, float* db, int64_t w);
void column_sums_half_span_baseline(uint32_t dtype, const uint16_t* dy, int64_t rows, int64_t ld,
                                    float* db, int64_t w);
void column_sums_half_span_avx2(uint32_t dtype, const uint16_t* dy, int64_t rows, int64_t ld,
                                float* db, int64_t w);
void column_sums_half_span_avx512(uint32_t dtype, const uint16_t* dy, int64_t rows, int64_t ld,
                                  float* db, int64_t w);
void adam_span_baseline(const AdamScalars& s, const float* param_in, const float* grad,
                        const float* m_in, const float* v_in, float* param, float* m_out,
                        float* v_out, int64_t n);
void adam_span_avx2(const AdamScalars& s, const float* param_in, const float* grad,
                    const float* m_in, const float* v_in, float* param, float* m_out, float* v_out,
                    int64_t n);
void adam_span_avx512(const AdamScalars& s, const float* param_in, const float* grad,
                      const float* m_in, const float* v_in, float* param, float* m_out,
                      float* v_out, int64_t n);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_ISA_MATH_SPAN_H_
