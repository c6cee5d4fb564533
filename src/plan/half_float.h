// The 16-bit float encodings a plan's tensors may use, and their scalar conversions to and from
// float32: REMAT_DTYPE_BF16 (bfloat16, the top 16 bits of an IEEE binary32) and REMAT_DTYPE_F16
// (IEEE binary16), little-endian as every dtype. Plain C++ without intrinsics, so the firmware
// build, the CPU backend and the tests share one definition; the CPU backend's vector spans
// (backends/cpu/isa/half_span.h) give these functions' bits.
#ifndef REMAT_PLAN_HALF_FLOAT_H_
#define REMAT_PLAN_HALF_FLOAT_H_

#include <stdint.h>

namespace remat {

/// Whether remat_dtype value |dtype| is one of the 16-bit float encodings (f16, bf16).
bool is_half_float(uint32_t dtype);

/// |x| rounded to the nearest bfloat16, ties to even. Infinities and zeros keep their sign; a
/// NaN stays a NaN with its sign and the top 7 bits of its payload, made quiet (bit 6 set), so a
/// NaN never rounds into an infinity. Subnormals round like any other value (no flushing).
uint16_t f32_to_bf16(float x);

/// The float32 whose top 16 bits are |h| and whose low 16 are zero: exact, a NaN stays as it is.
float bf16_to_f32(uint16_t h);

/// |x| rounded to the nearest binary16, ties to even: magnitudes from 65520 (the midpoint
/// between 65504, the largest finite, and 65536) become infinities; below 2^-14 they round to
/// the binary16 subnormals (steps of 2^-24), and to a signed zero at or below 2^-25. A NaN stays
/// a NaN with its sign and the top 10 bits of its payload, made quiet (bit 9 set), as F16C's
/// vcvtps2ph does.
uint16_t f32_to_f16(float x);

/// The float32 of binary16 |h|: exact for every finite value and infinity (subnormals included);
/// a NaN becomes a quiet float32 NaN with its sign and payload (bit 22 set), as F16C's
/// vcvtph2ps does.
float f16_to_f32(uint16_t h);

}  // namespace remat

#endif  // REMAT_PLAN_HALF_FLOAT_H_
