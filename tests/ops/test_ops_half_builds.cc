// Every build of the 16-bit float spans this CPU runs (backends/cpu/isa/half_span.h), not only
// the one the backend picks, gives the bits of the scalar conversions (plan/half_float.h) at
// lengths below, at and past each vector width, over values that hit every path: ties, overflow,
// subnormals of both formats, infinities and NaNs. Nothing past the span is written. The same of
// the widening down columns that packs a GEMM operand stored along K.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <string.h>

#include <vector>

#include "backends/cpu/isa/half_span.h"
#include "plan/half_float.h"
#include "remat/remat.h"

namespace {

struct Build {
  const char* name;
  void (*widen)(uint32_t, const uint16_t*, float*, int64_t);
  void (*narrow)(uint32_t, const float*, uint16_t*, int64_t);
  void (*widen_columns)(uint32_t, const uint16_t*, int64_t, int64_t, int64_t, float*, int64_t);
};

std::vector<Build> builds() {
  std::vector<Build> out = {{"baseline", remat::cpu::widen_span_baseline,
                             remat::cpu::narrow_span_baseline, remat::cpu::widen_columns_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    out.push_back({"avx2", remat::cpu::widen_span_avx2, remat::cpu::narrow_span_avx2,
                   remat::cpu::widen_columns_avx2});
  }
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back({"avx512", remat::cpu::widen_span_avx512, remat::cpu::narrow_span_avx512,
                   remat::cpu::widen_columns_avx512});
  }
#endif
  out.push_back(
      {"dispatched", remat::cpu::widen_span, remat::cpu::narrow_span, remat::cpu::widen_columns});
  return out;
}

uint64_t g_state = 77;
uint32_t random_bits() {
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

// Floats that take each path of both roundings, then random bit patterns, then values of the
// binary16 range (where most of its codes are).
std::vector<float> test_floats(size_t n) {
  const uint32_t special[] = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F800001u, 0xFFA00000u, 0x7FC00000u,
      0x00000001u, 0x80008000u, 0x00018000u, 0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x477FE000u,
      0x477FF000u, 0xC77FEFFFu, 0x33000000u, 0x33400000u, 0x33C00000u, 0x387FC000u, 0x38800000u,
      0x3F800000u, 0x3F801000u, 0x3F803000u, 0x4B000000u, 0x0080FFFFu, 0x007FFFFFu};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = random_bits();
    if (i < sizeof(special) / sizeof(special[0])) {
      u = special[i];
    } else if (i % 2 == 0) {
      u = (u & 0x87FFFFFFu) | 0x30000000u;  // magnitudes 2^-31 .. 2^16
    }
    memcpy(&v[i], &u, sizeof(u));
  }
  return v;
}

constexpr int64_t kLengths[] = {0, 1, 15, 16, 17, 31, 32, 33, 1000};
constexpr uint16_t kGuard16 = 0xA5A5;
constexpr uint32_t kGuard32 = 0xDEADBEEFu;

void narrowing_gives_the_scalar_bits_in_every_build(void**) {
  for (const Build& b : builds()) {
    for (uint32_t dtype : {uint32_t{REMAT_DTYPE_F16}, uint32_t{REMAT_DTYPE_BF16}}) {
      for (int64_t n : kLengths) {
        const std::vector<float> x = test_floats(static_cast<size_t>(n));
        std::vector<uint16_t> y(static_cast<size_t>(n) + 8, kGuard16);
        b.narrow(dtype, x.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          const uint16_t want =
              dtype == REMAT_DTYPE_F16 ? remat::f32_to_f16(x[i]) : remat::f32_to_bf16(x[i]);
          if (y[i] != want) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof(u));
            fail_msg("%s narrow dtype %u n %lld [%lld] of %08x: %04x, scalar %04x", b.name, dtype,
                     static_cast<long long>(n), static_cast<long long>(i), u, y[i], want);
          }
        }
        for (size_t i = static_cast<size_t>(n); i < y.size(); ++i)
          if (y[i] != kGuard16)
            fail_msg("%s narrow n %lld wrote past the span", b.name, (long long)n);
      }
    }
  }
}

void widening_gives_the_scalar_bits_in_every_build(void**) {
  for (const Build& b : builds()) {
    for (uint32_t dtype : {uint32_t{REMAT_DTYPE_F16}, uint32_t{REMAT_DTYPE_BF16}}) {
      // All 65536 patterns, then the lengths around the vector widths.
      std::vector<uint16_t> all(65536);
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
      std::vector<int64_t> lengths(kLengths, kLengths + sizeof(kLengths) / sizeof(kLengths[0]));
      lengths.push_back(65536);
      for (int64_t n : lengths) {
        const uint16_t* x = all.data() + (n == 65536 ? 0 : 0x7BF0);  // near infinities and NaNs
        std::vector<uint32_t> y(static_cast<size_t>(n) + 8, kGuard32);
        b.widen(dtype, x, reinterpret_cast<float*>(y.data()), n);
        for (int64_t i = 0; i < n; ++i) {
          const float f =
              dtype == REMAT_DTYPE_F16 ? remat::f16_to_f32(x[i]) : remat::bf16_to_f32(x[i]);
          uint32_t want;
          memcpy(&want, &f, sizeof(want));
          if (y[i] != want) {
            fail_msg("%s widen dtype %u n %lld of %04x: %08x, scalar %08x", b.name, dtype,
                     static_cast<long long>(n), x[i], y[i], want);
          }
        }
        for (size_t i = static_cast<size_t>(n); i < y.size(); ++i)
          if (y[i] != kGuard32)
            fail_msg("%s widen n %lld wrote past the span", b.name, (long long)n);
      }
    }
  }
}

// Fails unless b.widen_columns() of |rows| random runs of |n| 16-bit floats of |dtype|, |ld|
// apart, into a y whose columns are |ldy| floats long gives the scalar conversions and leaves y's
// other elements as they were.
void check_widen_columns(const Build& b, uint32_t dtype, int64_t rows, int64_t n, int64_t ld,
                         int64_t ldy) {
  std::vector<uint16_t> x(static_cast<size_t>((rows - 1) * ld + n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(random_bits());
  std::vector<uint32_t> y(static_cast<size_t>(n * ldy), kGuard32);
  b.widen_columns(dtype, x.data(), ld, rows, n, reinterpret_cast<float*>(y.data()), ldy);
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t r = 0; r < ldy; ++r) {
      uint32_t want = kGuard32;
      if (r < rows) {
        const uint16_t h = x[static_cast<size_t>(r * ld + p)];
        const float f = dtype == REMAT_DTYPE_F16 ? remat::f16_to_f32(h) : remat::bf16_to_f32(h);
        memcpy(&want, &f, sizeof(want));
      }
      const uint32_t got = y[static_cast<size_t>(p * ldy + r)];
      if (got != want) {
        fail_msg(
            "%s widen_columns dtype %u rows %lld n %lld ld %lld ldy %lld: y[%lld][%lld] %08x, "
            "want %08x",
            b.name, dtype, static_cast<long long>(rows), static_cast<long long>(n),
            static_cast<long long>(ld), static_cast<long long>(ldy), static_cast<long long>(p),
            static_cast<long long>(r), got, want);
      }
    }
  }
}

// widen_columns() transposes in blocks of 8 (AVX2 and AVX-512) and 16 (AVX-512) rows and
// elements: rows and runs below, at and past each, every 16-bit pattern among the values; rows
// end to end into a y as wide as they are (the packed engine's panels; x holds nothing past the
// last run, so an over-read is AddressSanitizer's to see), and rows with elements between them
// that must not be read into y, into a y whose columns have elements past the rows' that must
// stay as they were.
void widening_down_columns_gives_the_scalar_bits_in_every_build(void**) {
  constexpr int64_t kSizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40};
  for (const Build& b : builds()) {
    for (uint32_t dtype : {uint32_t{REMAT_DTYPE_F16}, uint32_t{REMAT_DTYPE_BF16}}) {
      for (int64_t rows : kSizes) {
        for (int64_t n : kSizes) {
          check_widen_columns(b, dtype, rows, n, n, rows);
          check_widen_columns(b, dtype, rows, n, n + 3, rows + 5);
        }
      }
    }
  }
}

}  // namespace

int main() {
  for (const Build& b : builds()) printf("build: %s\n", b.name);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(narrowing_gives_the_scalar_bits_in_every_build),
      cmocka_unit_test(widening_gives_the_scalar_bits_in_every_build),
      cmocka_unit_test(widening_down_columns_gives_the_scalar_bits_in_every_build),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
