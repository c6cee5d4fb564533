// Every build of the elementwise math spans this CPU runs (backends/cpu/isa/math_span.h), not only
// the one the kernels pick: Adam's update in place gives the bits of its formula evaluated one
// float operation at a time, in every build; GELU, its gradient and the shifted exponential
// are within float32 rounding of float64. Spans of 37 and 100 elements: whole vectors and a
// short last one.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <string.h>

#include <vector>

#include "backends/cpu/isa/math_span.h"
#include "op_harness.h"

namespace {

using remat::cpu::AdamScalars;

struct Build {
  const char* name;
  void (*adam)(const AdamScalars&, const float*, const float*, const float*, const float*, float*,
               float*, float*, int64_t);
  void (*gelu)(const float*, float*, int64_t);
  void (*gelu_grad)(const float*, const float*, float*, int64_t);
  void (*exp_shifted)(const float*, float, float*, int64_t);
  void (*column_sums)(const float*, int64_t, int64_t, float*, int64_t);
};

std::vector<Build> builds() {
  std::vector<Build> out = {{"baseline", remat::cpu::adam_span_baseline,
                             remat::cpu::gelu_span_baseline, remat::cpu::gelu_grad_span_baseline,
                             remat::cpu::exp_shifted_span_baseline,
                             remat::cpu::column_sums_span_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({"avx2", remat::cpu::adam_span_avx2, remat::cpu::gelu_span_avx2,
                   remat::cpu::gelu_grad_span_avx2, remat::cpu::exp_shifted_span_avx2,
                   remat::cpu::column_sums_span_avx2});
  }
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back({"avx512", remat::cpu::adam_span_avx512, remat::cpu::gelu_span_avx512,
                   remat::cpu::gelu_grad_span_avx512, remat::cpu::exp_shifted_span_avx512,
                   remat::cpu::column_sums_span_avx512});
  }
#endif
  return out;
}

// Adam as the header states it, one rounded float operation at a time. volatile keeps the
// compiler from fusing a multiply and an add here.
void adam_reference(const AdamScalars& s, std::vector<float>& p, const std::vector<float>& grad,
                    std::vector<float>& m, std::vector<float>& v) {
  for (size_t i = 0; i < p.size(); ++i) {
    volatile float pi = p[i], g = grad[i];
    if (s.decoupled) {
      pi = pi * s.decay;
    } else {
      volatile float t = s.wd * pi;
      g = g + t;
    }
    volatile float m1 = s.b1 * m[i], m2 = s.one_minus_b1 * g;
    volatile float mi = m1 + m2;
    volatile float gg = s.one_minus_b2 * g;
    volatile float v1 = s.b2 * v[i], v2 = gg * g;
    volatile float vi = v1 + v2;
    volatile float root = sqrtf(vi);
    volatile float scaled = root / s.bias2_sqrt;
    volatile float denom = scaled + s.eps;
    volatile float ratio = mi / denom;
    volatile float step = s.step_size * ratio;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step;
  }
}

void adam_in_place_gives_its_formulas_bits_in_every_build(void**) {
  for (const Build& b : builds()) {
    for (bool decoupled : {false, true}) {
      for (int64_t n : {int64_t{37}, int64_t{100}}) {
        ops_test::Rng rng(static_cast<uint64_t>(n) + (decoupled ? 1000 : 0));
        std::vector<float> p(static_cast<size_t>(n)), g(p.size()), m(p.size()), v(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
          p[i] = static_cast<float>(rng.uniform(-1, 1));
          g[i] = static_cast<float>(rng.uniform(-1, 1));
          m[i] = static_cast<float>(rng.uniform(-0.1, 0.1));
          v[i] = static_cast<float>(rng.uniform(0, 0.01));
        }
        const AdamScalars s{0.9f,    0.999f, 0.1f,  0.001f,  0.0123f,
                            0.0447f, 1e-8f,  0.01f, 0.9999f, decoupled};
        std::vector<float> rp = p, rm = m, rv = v;
        adam_reference(s, rp, g, rm, rv);
        b.adam(s, p.data(), g.data(), m.data(), v.data(), p.data(), m.data(), v.data(), n);
        if (memcmp(p.data(), rp.data(), p.size() * 4) != 0 ||
            memcmp(m.data(), rm.data(), m.size() * 4) != 0 ||
            memcmp(v.data(), rv.data(), v.size() * 4) != 0) {
          fail_msg("%s (decoupled %d, %lld elements): Adam's bits differ from its formula's",
                   b.name, decoupled, static_cast<long long>(n));
        }
      }
    }
  }
}

void near(double got, double want, const char* build, const char* what, size_t i) {
  if (!(fabs(got - want) <= 2e-6 * (1.0 + fabs(want)))) {
    fail_msg("%s: %s[%zu] = %.9g, float64 gives %.9g", build, what, i, got, want);
  }
}

void gelu_and_exp_match_float64_in_every_build(void**) {
  for (const Build& b : builds()) {
    for (int64_t n : {int64_t{37}, int64_t{100}}) {
      ops_test::Rng rng(static_cast<uint64_t>(n));
      std::vector<float> x(static_cast<size_t>(n)), dy(x.size()), y(x.size(), 7.0f),
          dx(x.size(), 7.0f), e(x.size(), 7.0f);
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(rng.uniform(-6, 6));
        dy[i] = static_cast<float>(rng.uniform(-1, 1));
      }
      b.gelu(x.data(), y.data(), n);
      b.gelu_grad(dy.data(), x.data(), dx.data(), n);
      b.exp_shifted(x.data(), 2.5f, e.data(), n);
      for (size_t i = 0; i < x.size(); ++i) {
        const double xi = x[i], cdf = 0.5 * (1.0 + erf(xi / sqrt(2.0)));
        const double pdf = exp(-0.5 * xi * xi) / sqrt(2.0 * M_PI);
        near(y[i], xi * cdf, b.name, "gelu", i);
        near(dx[i], dy[i] * (cdf + xi * pdf), b.name, "gelu_grad", i);
        near(e[i], exp(xi - 2.5), b.name, "exp_shifted", i);
      }
    }
  }
}

// Column sums: every build gives the bits of one double sum per column in row order, rounded
// once (written out here), on widths that leave a short last vector, and on values whose
// float sums would cancel differently (1e8 and 1 alternating).
void column_sums_give_the_bits_of_a_double_sum_in_row_order_in_every_build(void**) {
  const int64_t rows = 301, ld = 300;
  ops_test::Rng rng(9);
  std::vector<float> dy(static_cast<size_t>(rows * ld));
  for (size_t i = 0; i < dy.size(); ++i) {
    dy[i] = i % 7 == 0 ? (i % 2 ? 1e8f : -1e8f) : static_cast<float>(rng.uniform(-1, 1));
  }
  for (const Build& b : builds()) {
    for (int64_t w : {int64_t{1}, int64_t{37}, int64_t{256}}) {
      std::vector<float> db(static_cast<size_t>(w) + 1, 7.0f);
      b.column_sums(dy.data() + 3, rows, ld, db.data(), w);
      for (int64_t j = 0; j < w; ++j) {
        volatile double sum = 0.0;  // one rounded double add at a time
        for (int64_t r = 0; r < rows; ++r)
          sum = sum + static_cast<double>(dy[static_cast<size_t>(r * ld + 3 + j)]);
        const float want = static_cast<float>(sum);
        if (memcmp(&db[static_cast<size_t>(j)], &want, sizeof want) != 0) {
          fail_msg("%s: column %lld of %lld sums to %.9g, expected %.9g", b.name,
                   static_cast<long long>(j), static_cast<long long>(w),
                   static_cast<double>(db[static_cast<size_t>(j)]), static_cast<double>(want));
        }
      }
      if (db[static_cast<size_t>(w)] != 7.0f)
        fail_msg("%s: wrote past column %lld", b.name, static_cast<long long>(w));
    }
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(adam_in_place_gives_its_formulas_bits_in_every_build),
      cmocka_unit_test(column_sums_give_the_bits_of_a_double_sum_in_row_order_in_every_build),
      cmocka_unit_test(gelu_and_exp_match_float64_in_every_build),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
