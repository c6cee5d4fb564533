// Scalar float32 <-> bfloat16 and binary16 conversions, on the bits (integer arithmetic only:
// the result does not depend on the FPU's rounding mode or flush-to-zero setting).
#include "plan/half_float.h"

#include <string.h>

#include "remat/remat.h"

namespace remat {
namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof(u));
  return u;
}

float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

constexpr uint32_t kF32Inf = 0x7F800000u;

}  // namespace

bool is_half_float(uint32_t dtype) { return dtype == REMAT_DTYPE_F16 || dtype == REMAT_DTYPE_BF16; }

uint16_t f32_to_bf16(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) > kF32Inf) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7FFF rounds halves down and more than halves up; the kept lowest bit adds the one
  // that turns a tie into a round to even. A carry moves into the exponent (up to infinity).
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_f16(float x) {
  const uint32_t u = bits_of(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > kF32Inf) return static_cast<uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 65520 and up: infinity
  if (a >= 0x38800000u) {  // 2^-14 and up: a normal binary16
    // Rebias the exponent (127 - 15 = 112) and round the 13 dropped bits to even, as bf16 does.
    const uint32_t r = a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  const uint32_t e = a >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
  // A subnormal result in units of 2^-24: the 24-bit significand shifted right by 126 - e
  // (14..24), rounded to even. Rounding up from 0x3FF gives 0x400, the smallest normal.
  const uint32_t m = (a & 0x007FFFFFu) | 0x00800000u;
  const uint32_t shift = 126 - e;
  uint32_t r = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  int32_t e = (h >> 10) & 0x1F;
  uint32_t m = h & 0x03FFu;
  if (e == 0x1F) return float_of(sign | kF32Inf | (m != 0 ? 0x00400000u | (m << 13) : 0u));
  if (e == 0) {
    if (m == 0) return float_of(sign);
    // A subnormal, m * 2^-24: shift its leading one into the implicit bit's place.
    e = 1;
    while ((m & 0x0400u) == 0) {
      m <<= 1;
      --e;
    }
    m &= 0x03FFu;
  }
  return float_of(sign | (static_cast<uint32_t>(e + 112) << 23) | (m << 13));
}

}  // namespace remat
