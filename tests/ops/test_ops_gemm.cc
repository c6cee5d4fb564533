// The CPU backend's packed GEMM engine (backends/cpu/gemm/gemm.h), in every instruction-set build
// this CPU runs: against a float64 product for every transpose, beta 0 and 1 and sizes that
// leave partial micro-tiles and K blocks; computed in row and column slices, as the
// convolution threads compute it, to the bits of the whole product; and with op(B) walked in
// place, or over whole padded images by output position, to the bits of op(B) stored. The
// dot-product engine likewise: against float64 over the columns it keeps, with inf and NaN in the
// ones it drops, and over whole images, and in slices to the bits of the whole. And gemm() runs
// the engine matmul_engine() names.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "op_harness.h"

namespace {

using remat::cpu::Gemm;
using remat::cpu::GemmDot;
using Engine = void (*)(const Gemm&);
using DotEngine = void (*)(const GemmDot&);

struct NamedEngine {
  const char* name;
  Engine run;
};

// The builds of the packed engine this CPU can run.
std::vector<NamedEngine> engines() {
  std::vector<NamedEngine> out = {{"baseline", remat::cpu::packed_gemm_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", remat::cpu::packed_gemm_avx2});
  if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512", remat::cpu::packed_gemm_avx512});
#endif
  return out;
}

struct NamedDotEngine {
  const char* name;
  DotEngine run;
};

// The builds of the dot-product engine this CPU can run.
std::vector<NamedDotEngine> dot_engines() {
  std::vector<NamedDotEngine> out = {{"baseline", remat::cpu::dot_gemm_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", remat::cpu::dot_gemm_avx2});
  if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512", remat::cpu::dot_gemm_avx512});
#endif
  return out;
}

// Operands of an M x N x K product, stored transposed when asked, and C's starting values.
struct Product {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float beta;
  std::vector<float> a, b, c0;

  Product(int64_t m_, int64_t n_, int64_t k_, bool ta, bool tb, float beta_, uint64_t seed)
      : m(m_), n(n_), k(k_), trans_a(ta), trans_b(tb), beta(beta_) {
    ops_test::Rng rng(seed);
    a.resize(static_cast<size_t>(m * k));
    b.resize(static_cast<size_t>(k * n));
    c0.resize(static_cast<size_t>(m * n));
    for (float& v : a) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : b) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : c0) v = static_cast<float>(rng.uniform(-1, 1));
  }
  float at_a(int64_t i, int64_t p) const { return trans_a ? a[p * m + i] : a[i * k + p]; }
  float at_b(int64_t p, int64_t j) const { return trans_b ? b[j * k + p] : b[p * n + j]; }

  // The GEMM of rows [i0, i1) and columns [j0, j1) of C, written into |c|.
  Gemm slice(int64_t i0, int64_t i1, int64_t j0, int64_t j1, std::vector<float>& c,
             float* pack) const {
    Gemm g{};
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.m = i1 - i0;
    g.n = j1 - j0;
    g.k = k;
    g.alpha = 1.0f;
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

void packed_engines_match_a_float64_product(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  // Sizes around the micro-tiles (4, 6, 8 rows; 8, 16, 32 columns) and the blocks (96 rows,
  // 256 columns and K): partial tiles, several K blocks, and a product of one element; then
  // M, N and K one past and one short of the blocks of this build (gemm.h: kGemmMc, kGemmNc,
  // kGemmKc), so a changed block moves the sizes with it.
  using remat::cpu::kGemmKc;
  using remat::cpu::kGemmMc;
  using remat::cpu::kGemmNc;
  const int64_t sizes[][3] = {{1, 1, 1},
                              {7, 33, 5},
                              {16, 1024, 144},
                              {97, 70, 300},
                              {13, 257, 513},
                              {kGemmMc + 1, kGemmNc + 1, kGemmKc + 1},
                              {kGemmMc - 1, kGemmNc - 1, 2 * kGemmKc + 1}};
  for (const NamedEngine& engine : engines()) {
    for (const auto& size : sizes) {
      for (int transposes = 0; transposes < 4; ++transposes) {
        for (float beta : {0.0f, 1.0f}) {
          const Product p(size[0], size[1], size[2], transposes & 1, transposes & 2, beta,
                          17 + transposes);
          std::vector<float> c = p.c0;
          engine.run(p.slice(0, p.m, 0, p.n, c, pack.data()));
          for (int64_t i = 0; i < p.m; ++i) {
            for (int64_t j = 0; j < p.n; ++j) {
              double want = beta * static_cast<double>(p.c0[i * p.n + j]), scale = fabs(want);
              for (int64_t q = 0; q < p.k; ++q) {
                want += static_cast<double>(p.at_a(i, q)) * p.at_b(q, j);
                scale += fabs(static_cast<double>(p.at_a(i, q)) * p.at_b(q, j));
              }
              const double got = c[i * p.n + j];
              // Float sums of k terms: error within k ulps of the sum of magnitudes.
              if (fabs(got - want) > 1e-7 * static_cast<double>(p.k + 1) * (scale + 1.0)) {
                fail_msg(
                    "%s %lldx%lldx%lld trans %d beta %g: C[%lld,%lld] = %.9g, float64 gives %.9g",
                    engine.name, static_cast<long long>(p.m), static_cast<long long>(p.n),
                    static_cast<long long>(p.k), transposes, static_cast<double>(beta),
                    static_cast<long long>(i), static_cast<long long>(j), got, want);
              }
            }
          }
        }
      }
    }
  }
}

// gemm() runs the engine matmul_engine() names: the packed engine's bits where it says so, and
// otherwise OpenBLAS, named with its core, within float32 summation error of the packed engine.
void gemm_runs_the_engine_it_names(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const char* engine = remat::cpu::matmul_engine();
  const char* core = remat::cpu::matmul_blas_core();
  printf("matmul engine: %s (OpenBLAS core %s)\n", engine, core ? core : "none");
  const bool packed = strcmp(engine, "packed GEMM") == 0;
  if (!packed && (strcmp(engine, "OpenBLAS") != 0 || core == nullptr))
    fail_msg("matmul engine '%s', OpenBLAS core %s", engine, core ? core : "none");
  const Product p(70, 90, 300, false, true, 0.0f, 41);
  std::vector<float> by_gemm = p.c0, by_packed = p.c0;
  remat::cpu::gemm(p.slice(0, p.m, 0, p.n, by_gemm, pack.data()));
  remat::cpu::packed_gemm(p.slice(0, p.m, 0, p.n, by_packed, pack.data()));
  const bool same = memcmp(by_gemm.data(), by_packed.data(), by_gemm.size() * sizeof(float)) == 0;
  if (packed && !same) fail_msg("matmul engine is the packed one, but gemm() gives other bits");
  for (size_t i = 0; i < by_gemm.size(); ++i) {
    if (!(fabs(by_gemm[i] - by_packed[i]) <= 1e-4)) {
      fail_msg("C[%zu]: gemm() %.9g, packed engine %.9g", i, static_cast<double>(by_gemm[i]),
               static_cast<double>(by_packed[i]));
    }
  }
}

// The engine choice's rule, for cores this CPU does not have.
void a_blas_core_is_narrower_only_below_the_packed_engines_build(void**) {
  using remat::cpu::blas_core_narrower;
  using remat::cpu::CpuIsa;
  const struct {
    const char* core;
    CpuIsa isa;
    bool narrower;
  } cases[] = {
      {"Prescott", CpuIsa::kAvx512, true},    {"prescott", CpuIsa::kAvx2, true},
      {"Sandybridge", CpuIsa::kAvx2, true},   {"Haswell", CpuIsa::kAvx512, true},
      {"Haswell", CpuIsa::kAvx2, false},      {"Zen", CpuIsa::kAvx512, true},
      {"SkylakeX", CpuIsa::kAvx512, false},   {"SapphireRapids", CpuIsa::kAvx512, false},
      {"Prescott", CpuIsa::kBaseline, false}, {"CortexA57", CpuIsa::kAvx512, false},
      {nullptr, CpuIsa::kAvx512, false},
  };
  for (const auto& c : cases) {
    if (blas_core_narrower(c.core, c.isa) != c.narrower) {
      fail_msg("core %s against build %d: narrower %d, want %d", c.core ? c.core : "(null)",
               static_cast<int>(c.isa), !c.narrower, c.narrower);
    }
  }
}

// A row length past OpenBLAS's 32-bit integer (a head_matmul's interleaved rows may be that
// long): gemm() must not truncate it. A's two rows lie 2^31 + 64 floats apart in a mapping that
// reserves no memory, so only the pages of the two rows are ever touched.
void gemm_takes_row_lengths_past_32_bits(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const Product p(2, 40, 30, false, false, 0.0f, 23);
  const int64_t lda = (int64_t{1} << 31) + 64;
  const size_t bytes = static_cast<size_t>(lda + p.k) * sizeof(float);
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  assert_true(mapping != MAP_FAILED);
  float* a = static_cast<float*>(mapping);
  for (int64_t q = 0; q < p.k; ++q) {
    a[q] = p.at_a(0, q);
    a[lda + q] = p.at_a(1, q);
  }
  std::vector<float> c(p.c0.size(), NAN);
  Gemm g = p.slice(0, 2, 0, p.n, c, pack.data());
  g.a = a;
  g.lda = lda;
  remat::cpu::gemm(g);
  munmap(mapping, bytes);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < p.k; ++q) want += static_cast<double>(p.at_a(i, q)) * p.at_b(q, j);
      const float got = c[static_cast<size_t>(i * p.n + j)];
      if (!(fabs(got - want) <= 1e-5)) {
        fail_msg("C[%lld,%lld] = %.9g, float64 gives %.9g", static_cast<long long>(i),
                 static_cast<long long>(j), static_cast<double>(got), want);
      }
    }
  }
}

void slices_have_the_bits_of_the_whole_product(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  for (const NamedEngine& engine : engines()) {
    for (int transposes = 0; transposes < 4; ++transposes) {
      for (float beta : {0.0f, 1.0f}) {
        const Product p(50, 300, 600, transposes & 1, transposes & 2, beta, 5 + transposes);
        std::vector<float> whole = p.c0, by_rows = p.c0, by_columns = p.c0;
        engine.run(p.slice(0, p.m, 0, p.n, whole, pack.data()));
        // Uneven cuts, as parallel_for makes them: rows 0-17-50, columns 0-32-96-300.
        engine.run(p.slice(0, 17, 0, p.n, by_rows, pack.data()));
        engine.run(p.slice(17, p.m, 0, p.n, by_rows, pack.data()));
        const int64_t cuts[] = {0, 32, 96, 300};
        for (int part = 0; part < 3; ++part)
          engine.run(p.slice(0, p.m, cuts[part], cuts[part + 1], by_columns, pack.data()));
        if (memcmp(whole.data(), by_rows.data(), whole.size() * sizeof(float)) != 0 ||
            memcmp(whole.data(), by_columns.data(), whole.size() * sizeof(float)) != 0) {
          fail_msg("%s trans %d beta %g: a product in slices differs from the whole", engine.name,
                   transposes, static_cast<double>(beta));
        }
      }
    }
  }
}

// op(B) walked in place (Gemm::b_walk, the convolutions' taps over a padded image) gives the bits
// of the same matrix stored and packed: K crosses a block boundary inside a walk step (256 =
// 28 * 9 + 4), N leaves a partial tile and column block, and the rows are read up to
// kGemmColumnSlack floats past column N.
void a_walked_operand_has_the_bits_of_the_stored_one(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const int64_t m = 21, n = 300, inner = 3, middle = 3, outer = 40, k = inner * middle * outer;
  const remat::cpu::GemmRowWalk walk{inner, middle, 2, 310, 1000};
  ops_test::Rng rng(23);
  std::vector<float> source(
      static_cast<size_t>(outer * walk.outer_step + remat::cpu::kGemmColumnSlack));
  for (float& v : source) v = static_cast<float>(rng.uniform(-1, 1));
  const Product p(m, n, k, false, false, 1.0f, 29);
  std::vector<float> stored(static_cast<size_t>(k * n));
  for (int64_t row = 0; row < k; ++row) {
    const int64_t offset = row / (inner * middle) * walk.outer_step +
                           row / inner % middle * walk.middle_step + row % inner * walk.inner_step;
    memcpy(stored.data() + row * n, source.data() + offset, static_cast<size_t>(n) * sizeof(float));
  }
  for (const NamedEngine& engine : engines()) {
    for (float beta : {0.0f, 1.0f}) {
      std::vector<float> from_stored = p.c0, from_walk = p.c0;
      Gemm g = p.slice(0, m, 0, n, from_stored, pack.data());
      g.beta = beta;
      g.b = stored.data();
      engine.run(g);
      g.c = from_walk.data();
      g.b = source.data();
      g.ldb = 0;
      g.b_walk = walk;
      engine.run(g);
      if (memcmp(from_stored.data(), from_walk.data(), from_walk.size() * sizeof(float)) != 0) {
        fail_msg("%s beta %g: the walked operand's product differs from the stored one's",
                 engine.name, static_cast<double>(beta));
      }
    }
  }
}

// A dot product A B^T of m rows of A by n rows of B over k columns, B's rows walked (taps over a
// padded image), every third column dropped and the last ones kept, and the dropped columns of B
// inf, -inf or NaN: what the engine must never let reach C.
struct DotProduct {
  int64_t m, n, k, rounded;
  remat::cpu::GemmRowWalk walk;
  std::vector<float> a, source, c0;
  std::vector<int32_t> keep;

  DotProduct(int64_t m_, int64_t n_, int64_t k_, uint64_t seed) : m(m_), n(n_), k(k_) {
    rounded =
        (k + remat::cpu::kGemmDotLanes - 1) / remat::cpu::kGemmDotLanes * remat::cpu::kGemmDotLanes;
    // Rows (outer * 3 + middle) * 3 + inner, apart so that poison in one never lands in another.
    walk = {3, 3, rounded + 3, 3 * (rounded + 3) + 11, 3 * (3 * (rounded + 3) + 11) + 5};
    ops_test::Rng rng(seed);
    a.resize(static_cast<size_t>(m * rounded));
    for (float& v : a) v = static_cast<float>(rng.uniform(-1, 1));
    const int64_t outers = (n + 8) / 9;
    source.resize(static_cast<size_t>(outers * walk.outer_step + rounded));
    for (float& v : source) v = static_cast<float>(rng.uniform(-1, 1));
    keep.assign(static_cast<size_t>(rounded), 0);
    for (int64_t p = 0; p < k; ++p) keep[p] = p % 3 == 1 ? 0 : -1;
    const float poison[] = {INFINITY, -INFINITY, NAN};
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < rounded; ++p) {
        if (keep[p] == 0) source[row(j) + p] = poison[(j + p) % 3];
      }
    }
    c0.resize(static_cast<size_t>(m * n));
    for (float& v : c0) v = static_cast<float>(rng.uniform(-1, 1));
  }
  int64_t row(int64_t j) const {
    return j / 9 * walk.outer_step + j / 3 % 3 * walk.middle_step + j % 3 * walk.inner_step;
  }

  // Rows [i0, i1) of A by rows [j0, j1) of B, into |c|.
  GemmDot slice(int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool accumulate,
                std::vector<float>& c) const {
    GemmDot g{};
    g.m = i1 - i0;
    g.n = j1 - j0;
    g.k = k;
    g.a = a.data() + i0 * rounded;
    g.lda = rounded;
    g.b = source.data();
    g.b_walk = walk;
    g.b_row0 = j0;
    g.keep = keep.data();
    g.c = c.data() + i0 * n + j0;
    g.ldc = n;
    g.accumulate = accumulate;
    return g;
  }
};

void dot_engines_match_a_float64_product(void**) {
  // Sizes around the tiles (3 or 4 rows of A, 4 or 6 of B) and the lanes (4, 8, 16 columns).
  const int64_t sizes[][3] = {{1, 1, 1}, {5, 7, 17}, {16, 144, 1000}, {9, 13, 33}, {64, 25, 70}};
  for (const NamedDotEngine& engine : dot_engines()) {
    for (const auto& size : sizes) {
      for (bool accumulate : {false, true}) {
        const DotProduct d(size[0], size[1], size[2], 31);
        std::vector<float> c = d.c0;
        engine.run(d.slice(0, d.m, 0, d.n, accumulate, c));
        for (int64_t i = 0; i < d.m; ++i) {
          for (int64_t j = 0; j < d.n; ++j) {
            double want = accumulate ? d.c0[i * d.n + j] : 0.0, scale = fabs(want);
            for (int64_t p = 0; p < d.k; ++p) {
              if (d.keep[p] == 0) continue;
              const double term =
                  static_cast<double>(d.a[i * d.rounded + p]) * d.source[d.row(j) + p];
              want += term;
              scale += fabs(term);
            }
            const double got = c[i * d.n + j];
            if (!(fabs(got - want) <= 1e-7 * static_cast<double>(d.k + 1) * (scale + 1.0))) {
              fail_msg("%s %lldx%lldx%lld accumulate %d: C[%lld,%lld] = %.9g, float64 gives %.9g",
                       engine.name, static_cast<long long>(d.m), static_cast<long long>(d.n),
                       static_cast<long long>(d.k), accumulate, static_cast<long long>(i),
                       static_cast<long long>(j), got, want);
            }
          }
        }
      }
    }
  }
}

void dot_slices_have_the_bits_of_the_whole_product(void**) {
  for (const NamedDotEngine& engine : dot_engines()) {
    const DotProduct d(23, 40, 530, 37);
    std::vector<float> whole = d.c0, by_rows = d.c0, by_columns = d.c0;
    engine.run(d.slice(0, d.m, 0, d.n, true, whole));
    engine.run(d.slice(0, 10, 0, d.n, true, by_rows));
    engine.run(d.slice(10, d.m, 0, d.n, true, by_rows));
    // Cuts inside a tile and inside a walk step, as whole-channel thread parts need not be.
    const int64_t cuts[] = {0, 5, 18, 40};
    for (int part = 0; part < 3; ++part)
      engine.run(d.slice(0, d.m, cuts[part], cuts[part + 1], true, by_columns));
    if (memcmp(whole.data(), by_rows.data(), whole.size() * sizeof(float)) != 0 ||
        memcmp(whole.data(), by_columns.data(), whole.size() * sizeof(float)) != 0) {
      fail_msg("%s: a dot product in slices differs from the whole", engine.name);
    }
  }
}

// Whole padded images read by output position (GemmImages, GemmDot::Images): |images| images of
// |channels| padded channels [hp, wp] with 3 x 3 taps at dilation 2, the images' copies a few
// floats further apart than they need be, so that a wrong step reads the wrong numbers.
struct PaddedImages {
  int64_t images, channels, p, q, hp, wp, plane, image_step;
  std::vector<float> source;

  PaddedImages(int64_t images_, int64_t channels_, int64_t p_, int64_t q_, uint64_t seed)
      : images(images_), channels(channels_), p(p_), q(q_), hp(p_ + 4), wp(q_ + 5) {
    plane = hp * wp;
    image_step = channels * plane + 7;
    ops_test::Rng rng(seed);
    source.resize(static_cast<size_t>(images * image_step));
    for (float& v : source) v = static_cast<float>(rng.uniform(-1, 1));
  }
  int64_t taps() const { return channels * 9; }
  // Each tap's offset from an image's copy, as GemmImages takes them.
  std::vector<int64_t> tap_offsets() const {
    std::vector<int64_t> out;
    for (int64_t row = 0; row < taps(); ++row)
      out.push_back(row / 9 * plane + row / 3 % 3 * 2 * wp + row % 3 * 2);
    return out;
  }
  int64_t positions() const { return p * q; }
  // Tap |row|'s value at position |j| of image |n|.
  float at(int64_t n, int64_t row, int64_t j) const {
    return source[n * image_step + row / 9 * plane + row / 3 % 3 * 2 * wp + row % 3 * 2 +
                  j / q * wp + j % q];
  }
};

// The packed engine over whole images gives the bits of the same columns stored and packed: Q
// loaded in runs of 16, 8 or 4 columns, images whose positions leave a short last tile, K
// across a block boundary, and M past a block (kGemmMc).
void image_columns_have_the_bits_of_the_stored_operand(void**) {
  std::vector<float> pack(static_cast<size_t>(remat::cpu::kGemmPackFloats));
  const int64_t shapes[][2] = {{3, 4}, {2, 8}, {3, 12}, {1, 16}, {5, 24}, {2, 32}};
  for (const auto& shape : shapes) {
    const PaddedImages im(3, 30, shape[0], shape[1], 41);
    const int64_t k = im.taps(), pq = im.positions(), n = im.images * pq;
    const std::vector<int64_t> taps = im.tap_offsets();
    std::vector<float> stored(static_cast<size_t>(k * n));
    for (int64_t row = 0; row < k; ++row) {
      for (int64_t j = 0; j < n; ++j) stored[row * n + j] = im.at(j / pq, row, j % pq);
    }
    for (int64_t m : {int64_t{21}, int64_t{100}}) {
      const Product prod(m, n, k, false, false, 1.0f, 43);
      for (const NamedEngine& engine : engines()) {
        for (float beta : {0.0f, 1.0f}) {
          std::vector<float> from_stored = prod.c0, from_images(prod.c0.size());
          Gemm g = prod.slice(0, m, 0, n, from_stored, pack.data());
          g.beta = beta;
          g.b = stored.data();
          engine.run(g);
          // C as a convolution's output, image after image: [images, m, P * Q].
          for (int64_t img = 0; img < im.images; ++img) {
            for (int64_t i = 0; i < m; ++i) {
              memcpy(from_images.data() + (img * m + i) * pq, prod.c0.data() + i * n + img * pq,
                     static_cast<size_t>(pq) * sizeof(float));
            }
          }
          g.b = im.source.data();
          g.b_images = {im.images, im.p, im.q, im.wp, im.image_step, m * pq, taps.data()};
          g.c = from_images.data();
          g.ldc = pq;
          engine.run(g);
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              const float want = from_stored[i * n + j],
                          got = from_images[(j / pq * m + i) * pq + j % pq];
              if (memcmp(&want, &got, sizeof(float)) != 0) {
                fail_msg(
                    "%s %lldx%lld images, m %lld, beta %g: C[%lld,%lld] = %.9g, the stored operand "
                    "gives %.9g",
                    engine.name, static_cast<long long>(im.p), static_cast<long long>(im.q),
                    static_cast<long long>(m), static_cast<double>(beta), static_cast<long long>(i),
                    static_cast<long long>(j), static_cast<double>(got), static_cast<double>(want));
              }
            }
          }
        }
      }
    }
  }
}

// The dot-product engine over whole images, K their output positions: against float64 with Q
// loaded in runs of 16, 8 or 4, and in row and column slices to the bits of the whole.
void dot_images_match_a_float64_product(void**) {
  const int64_t shapes[][2] = {{4, 4}, {2, 8}, {4, 12}, {1, 16}, {2, 24}, {3, 32}};
  for (const auto& shape : shapes) {
    const PaddedImages im(3, 5, shape[0], shape[1], 47);
    const int64_t m = 7, n = im.taps() - 2, pq = im.positions(), a_step = m * pq + 5;
    const std::vector<int64_t> taps = im.tap_offsets();
    ops_test::Rng rng(53);
    std::vector<float> a(static_cast<size_t>(im.images * a_step));
    for (float& v : a) v = static_cast<float>(rng.uniform(-1, 1));
    std::vector<float> c0(static_cast<size_t>(m * n));
    for (float& v : c0) v = static_cast<float>(rng.uniform(-1, 1));
    auto slice = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, bool accumulate,
                     std::vector<float>& c) {
      GemmDot g{};
      g.m = i1 - i0;
      g.n = j1 - j0;
      g.a = a.data() + i0 * pq;
      g.lda = pq;
      g.b = im.source.data();
      g.b_row0 = j0 + 2;  // the taps from the third on
      g.c = c.data() + i0 * n + j0;
      g.ldc = n;
      g.accumulate = accumulate;
      g.images = {im.images, im.p, im.q, im.wp, a_step, im.image_step, taps.data()};
      return g;
    };
    for (const NamedDotEngine& engine : dot_engines()) {
      for (bool accumulate : {false, true}) {
        std::vector<float> whole = c0, by_rows = c0, by_columns = c0;
        engine.run(slice(0, m, 0, n, accumulate, whole));
        engine.run(slice(0, 3, 0, n, accumulate, by_rows));
        engine.run(slice(3, m, 0, n, accumulate, by_rows));
        engine.run(slice(0, m, 0, 10, accumulate, by_columns));
        engine.run(slice(0, m, 10, n, accumulate, by_columns));
        if (memcmp(whole.data(), by_rows.data(), whole.size() * sizeof(float)) != 0 ||
            memcmp(whole.data(), by_columns.data(), whole.size() * sizeof(float)) != 0) {
          fail_msg("%s %lldx%lld images: a dot product in slices differs from the whole",
                   engine.name, static_cast<long long>(im.p), static_cast<long long>(im.q));
        }
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double want = accumulate ? c0[i * n + j] : 0.0, scale = fabs(want);
            for (int64_t img = 0; img < im.images; ++img) {
              for (int64_t pos = 0; pos < pq; ++pos) {
                const double term =
                    static_cast<double>(a[img * a_step + i * pq + pos]) * im.at(img, j + 2, pos);
                want += term;
                scale += fabs(term);
              }
            }
            const double got = whole[i * n + j];
            if (!(fabs(got - want) <=
                  1e-7 * static_cast<double>(im.images * pq + 1) * (scale + 1.0))) {
              fail_msg("%s %lldx%lld images accumulate %d: C[%lld,%lld] = %.9g, float64 gives %.9g",
                       engine.name, static_cast<long long>(im.p), static_cast<long long>(im.q),
                       accumulate, static_cast<long long>(i), static_cast<long long>(j), got, want);
            }
          }
        }
      }
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(packed_engines_match_a_float64_product),
      cmocka_unit_test(gemm_takes_row_lengths_past_32_bits),
      cmocka_unit_test(gemm_runs_the_engine_it_names),
      cmocka_unit_test(a_blas_core_is_narrower_only_below_the_packed_engines_build),
      cmocka_unit_test(slices_have_the_bits_of_the_whole_product),
      cmocka_unit_test(a_walked_operand_has_the_bits_of_the_stored_one),
      cmocka_unit_test(dot_engines_match_a_float64_product),
      cmocka_unit_test(dot_slices_have_the_bits_of_the_whole_product),
      cmocka_unit_test(image_columns_have_the_bits_of_the_stored_operand),
      cmocka_unit_test(dot_images_match_a_float64_product),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
