// Conversions between float32 and the 16-bit float dtypes over spans, compiled once per
// instruction set (isa/half_span.cc; isa/isa.h): the CPU backend's widening of 16-bit tensors
// (widening.h). Every build gives the bits of the scalar conversions of plan/half_float.h. The
// functions without a suffix (isa/half_span_dispatch.cc) call the build the CPU runs best.
#ifndef REMAT_BACKENDS_CPU_ISA_HALF_SPAN_H_
#define REMAT_BACKENDS_CPU_ISA_HALF_SPAN_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// y[i] = the float32 of x[i], i < |n|, x holding 16-bit floats of |dtype| (REMAT_DTYPE_F16 or
/// REMAT_DTYPE_BF16): f16_to_f32() or bf16_to_f32() of each element.
void widen_span(uint32_t dtype, const uint16_t* x, float* y, int64_t n);

/// y[i] = x[i] rounded to |dtype| (REMAT_DTYPE_F16 or REMAT_DTYPE_BF16), i < |n|: f32_to_f16()
/// or f32_to_bf16() of each element.
void narrow_span(uint32_t dtype, const float* x, uint16_t* y, int64_t n);

/// y[p * ldy + r] = the float32 of x[r * ld + p], r < |rows|, p < |n|: widen_span() of |rows|
/// runs of |n| 16-bit floats of |dtype|, each written down a column of y (the packed GEMM engine's
/// panels of an operand stored along K: gemm/half_panels.h). Nothing else of y is written.
void widen_columns(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows, int64_t n, float* y,
                   int64_t ldy);

/// The builds for one instruction set; call only when the CPU has it (the AVX2 build also
/// needs F16C, which half_span_dispatch.cc checks).
void widen_span_baseline(uint32_t dtype, const uint16_t* x, float* y, int64_t n);
void widen_span_avx2(uint32_t dtype, const uint16_t* x, float* y, int64_t n);
void widen_span_avx512(uint32_t dtype, const uint16_t* x, float* y, int64_t n);
void narrow_span_baseline(uint32_t dtype, const float* x, uint16_t* y, int64_t n);
void narrow_span_avx2(uint32_t dtype, const float* x, uint16_t* y, int64_t n);
void narrow_span_avx512(uint32_t dtype, const float* x, uint16_t* y, int64_t n);
void widen_columns_baseline(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows, int64_t n,
                            float* y, int64_t ldy);
void widen_columns_avx2(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows, int64_t n,
                        float* y, int64_t ldy);
void widen_columns_avx512(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows, int64_t n,
                          float* y, int64_t ldy);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_ISA_HALF_SPAN_H_
