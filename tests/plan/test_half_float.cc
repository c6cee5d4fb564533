// The scalar 16-bit float conversions (plan/half_float.h) against references built another
// way: binary16 decoded with ldexp from its fields; rounding to the nearest representable
// value found by search and compared in double, ties to the even encoding.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <initializer_list>

#include "plan/half_float.h"
#include "remat/remat.h"

namespace {

using remat::bf16_to_f32;
using remat::f16_to_f32;
using remat::f32_to_bf16;
using remat::f32_to_f16;

uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof(u));
  return u;
}

float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

uint64_t g_state = 0x1234567887654321ull;
uint32_t random_bits() {  // splitmix64's high half
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

// binary16 |h| from its fields, IEEE 754's formula: (-1)^s 2^(e-15) (1 + m/1024), or
// 2^-14 (m/1024) when e = 0.
double f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0x1F) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp(m, -24);
  return sign * ldexp(1024 + m, e - 25);
}

// The binary16 nearest |x| (not a NaN), ties to the even encoding; 65520 and more round to
// infinity (IEEE: a value at least 2^16 - 2^4 overflows under round to nearest).
uint16_t f16_reference(float x) {
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  const double a = fabs(static_cast<double>(x));
  if (a >= 65520.0) return sign | 0x7C00;
  uint16_t lo = 0, hi = 0x7BFF;  // the largest finite code whose value is <= a
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (f16_value(mid) <= a) {
      lo = mid;
    } else {
      hi = static_cast<uint16_t>(mid - 1);
    }
  }
  const double below = f16_value(lo);
  const double above = lo == 0x7BFF ? 65536.0 : f16_value(static_cast<uint16_t>(lo + 1));
  const double d_lo = a - below, d_hi = above - a;
  const uint16_t code = d_lo < d_hi || (d_lo == d_hi && (lo & 1) == 0) ? lo : lo + 1;
  return sign | code;
}

// The bfloat16 nearest |x| (not a NaN): of the two floats with zero low halves around it, the
// nearer in double, ties to the even one; past the largest finite, infinity.
uint16_t bf16_reference(float x) {
  const uint32_t u = bits(x);
  const uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
  const double a = fabs(static_cast<double>(x));
  const double below = fabs(static_cast<double>(from_bits(lo)));
  // hi may be the infinity's encoding: the value it stands for is 2^128 there.
  const double above = (hi & 0x7FFFFFFFu) == 0x7F800000u ? ldexp(1.0, 128)
                                                         : fabs(static_cast<double>(from_bits(hi)));
  const double d_lo = a - below, d_hi = above - a;
  const uint32_t r = d_lo < d_hi || (d_lo == d_hi && (lo & 0x10000u) == 0) ? lo : hi;
  return static_cast<uint16_t>(r >> 16);
}

void every_f16_pattern_widens_to_its_ldexp_value(void**) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = f16_to_f32(static_cast<uint16_t>(h));
    const double want = f16_value(static_cast<uint16_t>(h));
    if (isnan(want)) {
      // A quiet NaN with the sign and the payload moved up.
      const uint32_t expected = ((h & 0x8000u) << 16) | 0x7FC00000u | ((h & 0x3FFu) << 13);
      if (bits(got) != expected) fail_msg("f16 %04x: %08x, expected %08x", h, bits(got), expected);
      continue;
    }
    if (static_cast<double>(got) != want || signbit(got) != signbit(want))
      fail_msg("f16 %04x: %.9g, expected %.9g", h, static_cast<double>(got), want);
  }
}

void every_f16_and_bf16_value_survives_a_round_trip(void**) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t x = static_cast<uint16_t>(h);
    const bool f16_nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
    const bool bf16_nan = (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0;
    if (!f16_nan) assert_int_equal(f32_to_f16(f16_to_f32(x)), x);
    if (!bf16_nan) assert_int_equal(f32_to_bf16(bf16_to_f32(x)), x);
    if (bf16_nan) assert_int_equal(f32_to_bf16(bf16_to_f32(x)), h | 0x40u);  // made quiet
    if (f16_nan) assert_int_equal(f32_to_f16(f16_to_f32(x)), h | 0x200u);
  }
}

void random_floats_round_to_the_nearest_even_16_bit_value(void**) {
  for (int i = 0; i < 2000000; ++i) {
    const float x = from_bits(random_bits());
    if (isnan(x)) continue;
    const uint16_t f16 = f32_to_f16(x), bf16 = f32_to_bf16(x);
    if (f16 != f16_reference(x))
      fail_msg("f16 of %08x: %04x, expected %04x", bits(x), f16, f16_reference(x));
    if (bf16 != bf16_reference(x))
      fail_msg("bf16 of %08x: %04x, expected %04x", bits(x), bf16, bf16_reference(x));
  }
}

// Every midpoint between two neighbouring finite binary16 values goes to the even one, and the
// floats just around it to the nearer one.
void f16_ties_go_to_even_and_neighbours_to_the_nearer(void**) {
  for (uint16_t lo = 0; lo < 0x7BFF; ++lo) {
    const uint16_t hi = static_cast<uint16_t>(lo + 1);
    const float mid = static_cast<float>((f16_value(lo) + f16_value(hi)) / 2);  // exact
    assert_int_equal(f32_to_f16(mid), (lo & 1) ? hi : lo);
    assert_int_equal(f32_to_f16(-mid), 0x8000 | ((lo & 1) ? hi : lo));
    assert_int_equal(f32_to_f16(nextafterf(mid, 0.0f)), lo);
    assert_int_equal(f32_to_f16(nextafterf(mid, INFINITY)), hi);
  }
}

void bf16_ties_go_to_even(void**) {
  assert_int_equal(f32_to_bf16(from_bits(0x3F808000u)), 0x3F80);  // 1 + 2^-8: even is down
  assert_int_equal(f32_to_bf16(from_bits(0x3F818000u)), 0x3F82);  // odd below: up
  assert_int_equal(f32_to_bf16(from_bits(0x3F808001u)), 0x3F81);
  assert_int_equal(f32_to_bf16(from_bits(0x3F817FFFu)), 0x3F81);
  assert_int_equal(f32_to_bf16(from_bits(0x00008000u)), 0x0000);  // subnormal tie: to zero
  assert_int_equal(f32_to_bf16(from_bits(0x00018000u)), 0x0002);  // subnormals round, not flush
  assert_int_equal(f32_to_bf16(from_bits(0x80000001u)), 0x8000);
}

void overflow_gives_infinity_and_specials_keep_sign_and_quiet(void**) {
  assert_int_equal(f32_to_f16(65504.0f), 0x7BFF);
  assert_int_equal(f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
  assert_int_equal(f32_to_f16(65520.0f), 0x7C00);
  assert_int_equal(f32_to_f16(-1e10f), 0xFC00);
  assert_int_equal(f32_to_f16(INFINITY), 0x7C00);
  assert_int_equal(f32_to_f16(-INFINITY), 0xFC00);
  assert_int_equal(f32_to_bf16(from_bits(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX rounds up
  assert_int_equal(f32_to_bf16(from_bits(0x7F7F7FFFu)), 0x7F7F);
  assert_int_equal(f32_to_bf16(-INFINITY), 0xFF80);
  // Signalling NaNs (quiet bit clear, payload in the low bits only) stay NaNs, quiet, signed.
  assert_int_equal(f32_to_f16(from_bits(0x7F800001u)), 0x7E00);
  assert_int_equal(f32_to_f16(from_bits(0xFFA00000u)), 0xFF00);
  assert_int_equal(f32_to_bf16(from_bits(0x7F800001u)), 0x7FC0);
  assert_int_equal(f32_to_bf16(from_bits(0xFF810000u)), 0xFFC1);
  assert_true(isnan(f16_to_f32(0x7C01)));
  assert_true(isinf(f16_to_f32(0xFC00)) && f16_to_f32(0xFC00) < 0);
  assert_int_equal(bits(bf16_to_f32(0xFF81)), 0xFF810000u);
}

void f16_subnormals_round_in_steps_of_2_to_the_minus_24(void**) {
  assert_int_equal(f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
  assert_int_equal(f32_to_f16(ldexpf(1.0f, -25)), 0x0000);  // a tie: to zero, the even one
  assert_int_equal(f32_to_f16(-ldexpf(1.0f, -25)), 0x8000);
  assert_int_equal(f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
  assert_int_equal(f32_to_f16(ldexpf(3.0f, -25)), 0x0002);  // 1.5 steps: a tie, to 2
  assert_int_equal(f32_to_f16(ldexpf(1.0f, -14) - ldexpf(1.0f, -25)), 0x0400);  // to normal
  assert_int_equal(f32_to_f16(from_bits(0x00000001u)), 0x0000);  // float32 subnormals: zero
  assert_int_equal(f32_to_f16(ldexpf(1023.0f, -24)), 0x03FF);
  assert_true(f16_to_f32(0x0001) == ldexpf(1.0f, -24));
  assert_true(f16_to_f32(0x83FF) == -ldexpf(1023.0f, -24));
}

void only_f16_and_bf16_are_half_floats(void**) {
  assert_true(remat::is_half_float(REMAT_DTYPE_F16));
  assert_true(remat::is_half_float(REMAT_DTYPE_BF16));
  for (uint32_t d : {0u, 3u, 4u, 5u, 255u}) assert_false(remat::is_half_float(d));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_f16_pattern_widens_to_its_ldexp_value),
      cmocka_unit_test(every_f16_and_bf16_value_survives_a_round_trip),
      cmocka_unit_test(random_floats_round_to_the_nearest_even_16_bit_value),
      cmocka_unit_test(f16_ties_go_to_even_and_neighbours_to_the_nearer),
      cmocka_unit_test(bf16_ties_go_to_even),
      cmocka_unit_test(overflow_gives_infinity_and_specials_keep_sign_and_quiet),
      cmocka_unit_test(f16_subnormals_round_in_steps_of_2_to_the_minus_24),
      cmocka_unit_test(only_f16_and_bf16_are_half_floats),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
