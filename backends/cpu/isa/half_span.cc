// The per-instruction-set builds of isa/half_span.h (isa/build.h). binary16 goes through F16C's
// vcvtph2ps / vcvtps2ph (rounding to nearest even, quieting NaNs as plan/half_float.cc does):
// the AVX2 build is compiled with -mf16c, the AVX-512 build uses their 16-lane AVX-512F forms;
// the baseline build calls the scalar conversions. bfloat16 is integer arithmetic on the bits
// in every build, a loop the compiler vectorises: AVX-512 BF16's vcvtneps2bf16 would treat
// subnormal inputs as zeros and flush subnormal results (not the scalar conversion's bits), and
// a fix-up of those lanes would cost what the integer rounding costs.
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/build.h"
#include "backends/cpu/isa/transposed_blocks.h"

#include "plan/half_float.h"
#include "remat/remat.h"

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace remat {
namespace cpu {
namespace {

void bf16_widen(const uint16_t* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(x[i]) << 16;
    memcpy(&y[i], &u, sizeof(u));
  }
}

// plan/half_float.cc's f32_to_bf16, written again here so that it vectorises: select, not branch.
void bf16_narrow(const float* __restrict x, uint16_t* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, &x[i], sizeof(u));
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet = (u >> 16) | 0x0040u;
    y[i] = static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded);
  }
}

#if defined(__AVX512F__)
// The zero-masked forms: GCC 12 warns that the plain ones' undefined source may be used.
constexpr int64_t kLanes = 16;
inline void f16_widen_vector(const uint16_t* x, float* y) {
  _mm512_storeu_ps(
      y, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))));
}
inline void f16_narrow_vector(const float* x, uint16_t* y) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y),
                      _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(x), _MM_FROUND_TO_NEAREST_INT));
}
#elif defined(__F16C__)
constexpr int64_t kLanes = 8;
inline void f16_widen_vector(const uint16_t* x, float* y) {
  _mm256_storeu_ps(y, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}
inline void f16_narrow_vector(const float* x, uint16_t* y) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(y),
                   _mm256_cvtps_ph(_mm256_loadu_ps(x), _MM_FROUND_TO_NEAREST_INT));
}
#endif

#if defined(__AVX512F__) || defined(__F16C__)
// Whole vectors, then the short rest through a zero-padded copy: the same instructions.
void f16_widen(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) f16_widen_vector(x + i, y + i);
  if (i == n) return;
  uint16_t in[kLanes] = {};
  float out[kLanes];
  memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
  f16_widen_vector(in, out);
  memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(float));
}

void f16_narrow(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) f16_narrow_vector(x + i, y + i);
  if (i == n) return;
  float in[kLanes] = {};
  uint16_t out[kLanes];
  memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(float));
  f16_narrow_vector(in, out);
  memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(uint16_t));
}
#else
void f16_widen(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

void f16_narrow(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}
#endif

#if REMAT_CPU_TRANSPOSED_BLOCKS
// A Load of 16-bit runs of |dtype| for transpose_into_columns(): the conversions above, a block's
// width at a time.
struct HalfRuns {
  uint32_t dtype;

  Block8::Vector operator()(const uint16_t* run, Block8) const {
    typedef uint16_t Halves __attribute__((vector_size(16)));
    typedef uint32_t Words __attribute__((vector_size(32)));
    Halves h;
    memcpy(&h, run, sizeof(h));
    if (dtype == REMAT_DTYPE_BF16) return (Block8::Vector)(__builtin_convertvector(h, Words) << 16);
#if defined(__AVX512F__)  // this build is not compiled with -mf16c: F16C's 16-lane form
    const __m512 wide = _mm512_maskz_cvtph_ps(0x00FF, _mm256_zextsi128_si256((__m128i)h));
    return __builtin_shufflevector(wide, wide, 0, 1, 2, 3, 4, 5, 6, 7);
#else
    return _mm256_cvtph_ps((__m128i)h);
#endif
  }
#if defined(__AVX512F__)
  Block16::Vector operator()(const uint16_t* run, Block16) const {
    typedef uint16_t Halves __attribute__((vector_size(32)));
    typedef uint32_t Words __attribute__((vector_size(64)));
    Halves h;
    memcpy(&h, run, sizeof(h));
    if (dtype == REMAT_DTYPE_BF16)
      return (Block16::Vector)(__builtin_convertvector(h, Words) << 16);
    return _mm512_maskz_cvtph_ps(0xFFFF, (__m256i)h);
  }
#endif
};
#endif

}  // namespace

void REMAT_CPU_ENTRY(widen_columns)(uint32_t dtype, const uint16_t* x, int64_t ld, int64_t rows,
                                    int64_t n, float* y, int64_t ldy) {
#if REMAT_CPU_TRANSPOSED_BLOCKS
  transpose_into_columns(x, ld, rows, n, y, ldy, HalfRuns{dtype});
#else
  // Each run widened as widen_span() widens it, then scattered down its column.
  float run[64];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t p0 = 0; p0 < n; p0 += 64) {
      const int64_t count = n - p0 < 64 ? n - p0 : 64;
      REMAT_CPU_ENTRY(widen_span)(dtype, x + r * ld + p0, run, count);
      for (int64_t p = 0; p < count; ++p) y[(p0 + p) * ldy + r] = run[p];
    }
  }
#endif
}

void REMAT_CPU_ENTRY(widen_span)(uint32_t dtype, const uint16_t* x, float* y, int64_t n) {
  if (dtype == REMAT_DTYPE_BF16) {
    bf16_widen(x, y, n);
  } else {
    f16_widen(x, y, n);
  }
}

void REMAT_CPU_ENTRY(narrow_span)(uint32_t dtype, const float* x, uint16_t* y, int64_t n) {
  if (dtype == REMAT_DTYPE_BF16) {
    bf16_narrow(x, y, n);
  } else {
    f16_narrow(x, y, n);
  }
}

}  // namespace cpu
}  // namespace remat
