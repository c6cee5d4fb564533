// The CPU backend's bfloat16 GEMM engines (backends/cpu/gemm/gemm.h: bf16_gemm on AMX tiles or
// with AVX512-BF16), each this CPU and OS run (none: every test is skipped, saying so), and
// bf16_gemm() itself, which must give the bits of the engine bf16_gemm_engine() names: against a
// float64 product of the same bfloat16 values for every transpose, beta 0 and 1, alpha, and sizes
// one short of, at and one past the tiles (16 and 32), the blocks (kBf16Mc, kBf16Nc, kBf16Kc) and
// twice them; computed in row and column slices (as the matmul kernel's threads compute it) to
// the bits of the whole; subnormal operands and sums read and flushed as zero; and the
// AVX512-BF16 engine's bits against a model of its instruction over k in order.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "op_harness.h"
#include "plan/half_float.h"

namespace {

using remat::cpu::Bf16Gemm;
using remat::cpu::kBf16Kc;
using remat::cpu::kBf16Mc;
using remat::cpu::kBf16Nc;

struct Engine {
  const char* name;
  void (*run)(const Bf16Gemm&);
};

// The engines this CPU and OS run, then bf16_gemm() (the backend's choice); skips the test
// where there is none. A test calls it before it allocates: skip() leaves the test by longjmp,
// so what it held would leak (LeakSanitizer fails the test on a CPU without the engines).
std::vector<Engine> engines_here() {
  std::vector<Engine> engines;
  if (remat::cpu::bf16_gemm_amx_available()) engines.push_back({"AMX", remat::cpu::bf16_gemm_amx});
  if (remat::cpu::bf16_gemm_avx512_available()) {
    engines.push_back({"AVX512-BF16", remat::cpu::bf16_gemm_avx512});
  }
  if (engines.empty()) {
    printf(
        "bf16_gemm: neither AMX-BF16 tiles nor AVX512-BF16 on this CPU or OS; nothing to test\n");
    skip();
  }
  engines.push_back({"bf16_gemm", remat::cpu::bf16_gemm});
  return engines;
}

// Operands of an M x N x K product in bfloat16, stored transposed when asked, and C's start.
struct Product {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  std::vector<uint16_t> a, b;
  std::vector<float> c0;

  Product(int64_t m_, int64_t n_, int64_t k_, bool ta, bool tb, float alpha_, float beta_,
          uint64_t seed)
      : m(m_), n(n_), k(k_), trans_a(ta), trans_b(tb), alpha(alpha_), beta(beta_) {
    ops_test::Rng rng(seed);
    a.resize(static_cast<size_t>(m * k));
    b.resize(static_cast<size_t>(k * n));
    c0.resize(static_cast<size_t>(m * n));
    for (uint16_t& v : a) v = remat::f32_to_bf16(static_cast<float>(rng.uniform(-1, 1)));
    for (uint16_t& v : b) v = remat::f32_to_bf16(static_cast<float>(rng.uniform(-1, 1)));
    for (float& v : c0) v = static_cast<float>(rng.uniform(-1, 1));
  }
  // The bits of op(A)(i, p) and op(B)(p, j); zero past K.
  uint16_t bits_a(int64_t i, int64_t p) const {
    return p >= k ? 0 : trans_a ? a[p * m + i] : a[i * k + p];
  }
  uint16_t bits_b(int64_t p, int64_t j) const {
    return p >= k ? 0 : trans_b ? b[j * k + p] : b[p * n + j];
  }
  double at_a(int64_t i, int64_t p) const { return remat::bf16_to_f32(bits_a(i, p)); }
  double at_b(int64_t p, int64_t j) const { return remat::bf16_to_f32(bits_b(p, j)); }

  // The product of rows [i0, i1) and columns [j0, j1) of C, written into |c|.
  Bf16Gemm slice(int64_t i0, int64_t i1, int64_t j0, int64_t j1, std::vector<float>& c,
                 float* pack) const {
    Bf16Gemm g{};
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.m = i1 - i0;
    g.n = j1 - j0;
    g.k = k;
    g.alpha = alpha;
    g.a = trans_a ? a.data() + i0 : a.data() + i0 * k;
    g.lda = trans_a ? m : k;
    g.b = trans_b ? b.data() + j0 * k : b.data() + j0;
    g.ldb = trans_b ? k : n;
    g.beta = beta;
    g.c = c.data() + i0 * n + j0;
    g.ldc = n;
    g.pack = pack;
    return g;
  }
};

// Calls |check| with a product of each of |sizes| (M, N, K) under every transpose and scaling:
// beta 0 with alpha 1 and 0.5, beta 1 (alpha 1 only: gemm.h); returns how many.
template <size_t kSizes, typename Check>
int for_every_product(const int64_t (&sizes)[kSizes][3], uint64_t seed, const Check& check) {
  int runs = 0;
  for (const auto& size : sizes) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      for (int scaling = 0; scaling < 3; ++scaling) {
        const float alpha = scaling == 1 ? 0.5f : 1.0f, beta = scaling == 2 ? 1.0f : 0.0f;
        check(Product(size[0], size[1], size[2], transposes & 1, transposes & 2, alpha, beta,
                      seed + transposes + 4 * scaling));
        ++runs;
      }
    }
  }
  return runs;
}

// Fails unless |c| is |p|'s product within float32 summation error, naming |engine|.
void check_against_float64(const Product& p, const std::vector<float>& c, const char* engine) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0.0, scale = 0.0;
      for (int64_t q = 0; q < p.k; ++q) {
        sum += p.at_a(i, q) * p.at_b(q, j);
        scale += fabs(p.at_a(i, q) * p.at_b(q, j));
      }
      const double c0 = p.c0[i * p.n + j];
      const double want = p.alpha * sum + p.beta * c0;
      // Products of bfloat16 pairs are exact in float32; each of at most K + 2 float32 sums
      // rounds by half an ulp of a partial sum within |alpha| * scale + |C0|.
      const double bound =
          (static_cast<double>(p.k) + 2.0) * ldexp(1.0, -24) * (fabs(p.alpha) * scale + fabs(c0)) +
          1e-30;
      const double got = c[i * p.n + j];
      if (!(fabs(got - want) <= bound)) {
        fail_msg(
            "%s: %lldx%lldx%lld trans %d%d alpha %g beta %g: C[%lld,%lld] = %.9g, float64 "
            "gives %.9g (bound %.3g)",
            engine, static_cast<long long>(p.m), static_cast<long long>(p.n),
            static_cast<long long>(p.k), p.trans_a, p.trans_b, static_cast<double>(p.alpha),
            static_cast<double>(p.beta), static_cast<long long>(i), static_cast<long long>(j), got,
            want, bound);
      }
    }
  }
}

void bf16_gemm_matches_a_float64_product(void**) {
  const std::vector<Engine> engines = engines_here();
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  // Around the tiles (16 rows, 16 columns, 32 of K; a block of C is 32 x 32) and the blocks.
  const int64_t sizes[][3] = {{1, 1, 1},
                              {15, 17, 31},
                              {16, 16, 32},
                              {17, 15, 33},
                              {31, 33, 64},
                              {32, 32, 65},
                              {33, 31, 100},
                              {kBf16Mc - 1, kBf16Nc - 1, kBf16Kc - 1},
                              {kBf16Mc, kBf16Nc, kBf16Kc},
                              {kBf16Mc + 1, kBf16Nc + 1, kBf16Kc + 1},
                              {2 * kBf16Mc + 3, 2 * kBf16Nc + 5, 2 * kBf16Kc + 7}};
  for (const Engine& engine : engines) {
    const int runs = for_every_product(sizes, 29, [&](const Product& p) {
      std::vector<float> c = p.c0;
      engine.run(p.slice(0, p.m, 0, p.n, c, pack.data()));
      check_against_float64(p, c, engine.name);
    });
    printf("%s: %d products within float32 summation error of float64\n", engine.name, runs);
  }
}

void bf16_gemm_of_empty_k_gives_zero_or_c(void**) {
  const std::vector<Engine> engines = engines_here();
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  for (const Engine& engine : engines) {
    for (float beta : {0.0f, 1.0f}) {
      const Product p(5, 7, 0, false, false, 1.0f, beta, 3);
      std::vector<float> c = p.c0;
      engine.run(p.slice(0, p.m, 0, p.n, c, pack.data()));
      for (size_t i = 0; i < c.size(); ++i) {
        if (c[i] != beta * p.c0[i]) {
          fail_msg("%s: K 0, beta %g: C[%zu] = %g", engine.name, beta, i, c[i]);
        }
      }
    }
  }
}

void bf16_slices_have_the_bits_of_the_whole_product(void**) {
  const std::vector<Engine> engines = engines_here();
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  for (const Engine& engine : engines) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      for (float beta : {0.0f, 1.0f}) {
        const Product p(90, 300, 1100, transposes & 1, transposes & 2, 1.0f, beta, 5 + transposes);
        std::vector<float> whole = p.c0, by_rows = p.c0, by_columns = p.c0;
        engine.run(p.slice(0, p.m, 0, p.n, whole, pack.data()));
        // Uneven cuts, as the matmul kernel's tiles may fall: rows 0-17-50-90, columns
        // 0-40-296-300.
        const int64_t rows[] = {0, 17, 50, 90}, columns[] = {0, 40, 296, 300};
        for (int part = 0; part < 3; ++part) {
          engine.run(p.slice(rows[part], rows[part + 1], 0, p.n, by_rows, pack.data()));
          engine.run(p.slice(0, p.m, columns[part], columns[part + 1], by_columns, pack.data()));
        }
        if (memcmp(whole.data(), by_rows.data(), whole.size() * sizeof(float)) != 0 ||
            memcmp(whole.data(), by_columns.data(), whole.size() * sizeof(float)) != 0) {
          fail_msg("%s: trans %d beta %g: a product in slices differs from the whole", engine.name,
                   transposes, static_cast<double>(beta));
        }
      }
    }
  }
}

// bf16_gemm() computes with the engine bf16_gemm_engine() names: the same bits.
void bf16_gemm_runs_the_engine_it_names(void**) {
  const std::vector<Engine> engines = engines_here();
  const char* named = remat::cpu::bf16_gemm_engine();
  assert_non_null(named);
  // AMX wherever the tiles run: it is listed first.
  assert_string_equal(named, engines[0].name);
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const Product p(70, 90, 777, false, true, 1.0f, 0.0f, 41);
  std::vector<float> by_engine = p.c0, dispatched = p.c0;
  engines[0].run(p.slice(0, p.m, 0, p.n, by_engine, pack.data()));
  remat::cpu::bf16_gemm(p.slice(0, p.m, 0, p.n, dispatched, pack.data()));
  assert_memory_equal(by_engine.data(), dispatched.data(), by_engine.size() * sizeof(float));
}

// Subnormal bfloat16 operands count as zero, in A and in B, and a sum that would be subnormal is
// flushed to zero, in both engines (the tiles and VDPBF16PS do both): 2^-133 times 2^100 adds
// nothing, and 2^-70 times 2^-70 (2^-140, a subnormal float) leaves zero.
void bf16_gemm_reads_subnormal_operands_and_sums_as_zero(void**) {
  const std::vector<Engine> engines = engines_here();
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const uint16_t kLeastSubnormal = 0x0001, kTwoTo100 = 0x7180, kTwoToMinus70 = 0x1c80;
  const uint16_t cases[][2] = {
      {kLeastSubnormal, kTwoTo100}, {kTwoTo100, kLeastSubnormal}, {kTwoToMinus70, kTwoToMinus70}};
  for (const Engine& engine : engines) {
    for (const auto& values : cases) {
      for (int transposes = 0; transposes < 4; ++transposes) {
        Product p(33, 17, 40, transposes & 1, transposes & 2, 1.0f, 0.0f, 7);
        for (uint16_t& v : p.a) v = values[0];
        for (uint16_t& v : p.b) v = values[1];
        std::vector<float> c(p.c0.size(), 1.0f);
        engine.run(p.slice(0, p.m, 0, p.n, c, pack.data()));
        for (size_t i = 0; i < c.size(); ++i) {
          if (c[i] != 0.0f) {
            fail_msg("%s: %04x x %04x: C[%zu] = %g, not 0", engine.name, values[0], values[1], i,
                     c[i]);
          }
        }
      }
    }
  }
}

// VDPBF16PS as Intel's manual gives it, on one element: the sum, then the pair's odd product
// added and rounded to float32, then its even one; subnormal operands read and subnormal sums
// flushed as zero (keeping the sign).
float vdpbf16ps(float sum, uint16_t a_even, uint16_t a_odd, uint16_t b_even, uint16_t b_odd) {
  auto value = [](uint16_t bits) {
    const float v = remat::bf16_to_f32(bits);
    return fpclassify(v) == FP_SUBNORMAL ? copysignf(0.0f, v) : v;
  };
  auto flushed = [](float v) { return fpclassify(v) == FP_SUBNORMAL ? copysignf(0.0f, v) : v; };
  sum = flushed(sum + value(a_odd) * value(b_odd));  // exact products: 8-bit significands
  return flushed(sum + value(a_even) * value(b_even));
}

// The AVX512-BF16 engine's bits are VDPBF16PS's over k in order, pair after pair, each block of
// kBf16Kc values of k padded with zeros to whole k-steps of 32 (as the engine reads them), the
// sums carried from block to block exactly, then times alpha: a model that knows nothing of the
// engine's packing, passes or edges.
void avx512_bf16_engine_gives_the_bits_of_vdpbf16ps_in_k_order(void**) {
  if (!remat::cpu::bf16_gemm_avx512_available()) {
    printf("no AVX512-BF16 on this CPU; nothing to test\n");
    skip();
  }
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const int64_t sizes[][3] = {{17, 33, 31}, {40, 70, 97}, {33, 65, kBf16Kc + 45}};
  for_every_product(sizes, 60, [&](const Product& p) {
    std::vector<float> c = p.c0;
    remat::cpu::bf16_gemm_avx512(p.slice(0, p.m, 0, p.n, c, pack.data()));
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        float sum = p.beta != 0.0f ? p.c0[i * p.n + j] : 0.0f;
        for (int64_t k0 = 0; k0 < p.k; k0 += kBf16Kc) {
          const int64_t kc = p.k - k0 < kBf16Kc ? p.k - k0 : kBf16Kc;
          const int64_t padded = (kc + 31) / 32 * 32;
          for (int64_t q = k0; q < k0 + padded; q += 2) {
            sum = vdpbf16ps(sum, p.bits_a(i, q), p.bits_a(i, q + 1), p.bits_b(q, j),
                            p.bits_b(q + 1, j));
          }
        }
        if (p.alpha != 1.0f) sum *= p.alpha;
        const float got = c[i * p.n + j];
        if (memcmp(&got, &sum, sizeof got) != 0) {
          fail_msg(
              "%lldx%lldx%lld trans %d%d alpha %g beta %g: C[%lld,%lld] = %.9g, the model "
              "gives %.9g",
              static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
              p.trans_a, p.trans_b, static_cast<double>(p.alpha), static_cast<double>(p.beta),
              static_cast<long long>(i), static_cast<long long>(j), static_cast<double>(got),
              static_cast<double>(sum));
        }
      }
    }
  });
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bf16_gemm_matches_a_float64_product),
      cmocka_unit_test(bf16_gemm_of_empty_k_gives_zero_or_c),
      cmocka_unit_test(bf16_slices_have_the_bits_of_the_whole_product),
      cmocka_unit_test(bf16_gemm_runs_the_engine_it_names),
      cmocka_unit_test(bf16_gemm_reads_subnormal_operands_and_sums_as_zero),
      cmocka_unit_test(avx512_bf16_engine_gives_the_bits_of_vdpbf16ps_in_k_order),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
