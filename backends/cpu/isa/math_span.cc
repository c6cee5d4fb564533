// The per-instruction-set builds of isa/math_span.h: meson compiles this file with REMAT_CPU_ISA
// set and the matching -m flags (isa/build.h). With REMAT_CPU_VECTOR_MATH (x86-64 with glibc's
// libmvec), the AVX2 and AVX-512 builds call its erff and expf on whole vectors; the baseline
// build, and any build without libmvec, calls the scalar ones. Meson builds it without
// floating-point contraction: Adam's formula rounds in every build as the baseline build's does.
#include <math.h>

#include "backends/cpu/isa/math_span.h"
#include "backends/cpu/isa/build.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/lane_sum.h"

#if REMAT_CPU_VECTOR_MATH && (defined(__AVX512F__) || defined(__AVX2__))
#include <immintrin.h>
#define REMAT_VECTOR_MATH 1
// libmvec's entry points (the x86-64 vector function ABI names of erff and expf).
extern "C" {
#if defined(__AVX512F__)
__m512 _ZGVeN16v_erff(__m512);
__m512 _ZGVeN16v_expf(__m512);
#else
__m256 _ZGVdN8v_erff(__m256);
__m256 _ZGVdN8v_expf(__m256);
#endif
}
#endif

namespace remat {
namespace cpu {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

#if REMAT_VECTOR_MATH
#if defined(__AVX512F__)
typedef __m512 Native;
inline vec vector_erf(vec x) {
  return reinterpret_cast<vec>(_ZGVeN16v_erff(reinterpret_cast<Native>(x)));
}
inline vec vector_exp(vec x) {
  return reinterpret_cast<vec>(_ZGVeN16v_expf(reinterpret_cast<Native>(x)));
}
#else
typedef __m256 Native;
inline vec vector_erf(vec x) {
  return reinterpret_cast<vec>(_ZGVdN8v_erff(reinterpret_cast<Native>(x)));
}
inline vec vector_exp(vec x) {
  return reinterpret_cast<vec>(_ZGVdN8v_expf(reinterpret_cast<Native>(x)));
}
#endif
static_assert(sizeof(Native) == sizeof(vec), "libmvec's vectors are this build's");
#endif

// Runs body(offset, count) over [0, n) in whole vectors; the last, shorter one too, through a
// zero-padded copy, so every element goes through the same vector code.
template <typename Body>
inline void for_vectors(int64_t n, const Body& body) {
  for (int64_t i = 0; i < n; i += kVec) body(i, n - i < kVec ? n - i : kVec);
}

// A whole vector is one unaligned load or store (a memcpy of constant size); only the short
// last one goes through a variable-length copy, which is a library call.
inline vec load(const float* p, int64_t count) {
  vec v = {};
  if (count == kVec) {
    memcpy(&v, p, sizeof(v));
  } else {
    memcpy(&v, p, static_cast<size_t>(count) * sizeof(float));
  }
  return v;
}

inline void store(float* p, vec v, int64_t count) {
  if (count == kVec) {
    memcpy(p, &v, sizeof(v));
  } else {
    memcpy(p, &v, static_cast<size_t>(count) * sizeof(float));
  }
}

// Square root lane by lane: one vector instruction (the kernels build without errno).
inline vec vector_sqrt(vec x) {
  vec r;
  for (int64_t l = 0; l < kVec; ++l) r[l] = sqrtf(x[l]);
  return r;
}

}  // namespace

void REMAT_CPU_ENTRY(gelu_span)(const float* x, float* y, int64_t n) {
#if REMAT_VECTOR_MATH
  for_vectors(n, [&](int64_t i, int64_t count) {
    const vec v = load(x + i, count);
    store(y + i, 0.5f * v * (1.0f + vector_erf(v * kInvSqrt2)), count);
  });
#else
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * kInvSqrt2));
#endif
}

void REMAT_CPU_ENTRY(gelu_grad_span)(const float* dy, const float* x, float* dx, int64_t n) {
#if REMAT_VECTOR_MATH
  for_vectors(n, [&](int64_t i, int64_t count) {
    const vec v = load(x + i, count);
    const vec cdf = 0.5f * (1.0f + vector_erf(v * kInvSqrt2));
    const vec pdf = kInvSqrt2Pi * vector_exp(-0.5f * v * v);
    store(dx + i, load(dy + i, count) * (cdf + v * pdf), count);
  });
#else
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + erff(x[i] * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * x[i] * x[i]);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
#endif
}

void REMAT_CPU_ENTRY(exp_shifted_span)(const float* x, float shift, float* y, int64_t n) {
#if REMAT_VECTOR_MATH
  for_vectors(n, [&](int64_t i, int64_t count) {
    store(y + i, vector_exp(load(x + i, count) - shift), count);
  });
#else
  for (int64_t i = 0; i < n; ++i) y[i] = expf(x[i] - shift);
#endif
}

void REMAT_CPU_ENTRY(column_sums_span)(const float* dy, int64_t rows, int64_t ld, float* db,
                                       int64_t w) {
  Accum acc[kColumnSumsWidth];
  for (int64_t j = 0; j < w; ++j) acc[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = dy + r * ld;
    for (int64_t j = 0; j < w; ++j) acc[j] += row[j];
  }
  for (int64_t j = 0; j < w; ++j) db[j] = static_cast<float>(acc[j]);
}

// A row at a time through a float32 row on the stack (1 KB), summed as column_sums_span() sums.
void REMAT_CPU_ENTRY(column_sums_half_span)(uint32_t dtype, const uint16_t* dy, int64_t rows,
                                            int64_t ld, float* db, int64_t w) {
  Accum acc[kColumnSumsWidth];
  float row[kColumnSumsWidth];
  for (int64_t j = 0; j < w; ++j) acc[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    widen_span(dtype, dy + r * ld, row, w);
    for (int64_t j = 0; j < w; ++j) acc[j] += row[j];
  }
  for (int64_t j = 0; j < w; ++j) db[j] = static_cast<float>(acc[j]);
}

// Every vector's inputs are loaded before its outputs are stored: the update runs in place.
void REMAT_CPU_ENTRY(adam_span)(const AdamScalars& s, const float* param_in, const float* grad,
                                const float* m_in, const float* v_in, float* param, float* m_out,
                                float* v_out, int64_t n) {
  for_vectors(n, [&](int64_t i, int64_t count) {
    vec p = load(param_in + i, count);
    vec g = load(grad + i, count);
    if (s.decoupled) {
      p *= s.decay;
    } else {
      g += s.wd * p;
    }
    const vec m = s.b1 * load(m_in + i, count) + s.one_minus_b1 * g;
    const vec v = s.b2 * load(v_in + i, count) + s.one_minus_b2 * g * g;
    store(m_out + i, m, count);
    store(v_out + i, v, count);
    store(param + i, p - s.step_size * (m / (vector_sqrt(v) / s.bias2_sqrt + s.eps)), count);
  });
}

}  // namespace cpu
}  // namespace remat
