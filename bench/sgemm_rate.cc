// The CPU backend's SGEMM rate (backends/cpu/gemm.h: OpenBLAS, or the portable kernels), on a
// square product and on the shapes a ResNet-20 convolution multiplies, for the tables of
// docs/benchmarks.md. It measures; it asserts nothing.
//
//   sgemm_rate [--repeats N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"

namespace {

struct Shape {
  const char* what;
  int64_t m, n, k;
};

// Best GFLOP/s of |repeats| products of |s| (C = A B, row-major, no transposes).
double rate(const Shape& s, int repeats) {
  std::vector<float> a(static_cast<size_t>(s.m * s.k), 0.5f), b(static_cast<size_t>(s.k * s.n), 0.25f),
      c(static_cast<size_t>(s.m * s.n));
  std::vector<float> pack(remat::cpu::scratch_bytes() / sizeof(float) + 1);
  remat::cpu::Gemm g{};
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  g.alpha = 1.0f;
  g.a = a.data();
  g.lda = s.k;
  g.b = b.data();
  g.ldb = s.n;
  g.c = c.data();
  g.ldc = s.n;
  g.pack = pack.data();
  double best = 0.0;
  for (int r = 0; r <= repeats; ++r) {  // the first run warms up
    const auto t0 = std::chrono::steady_clock::now();
    remat::cpu::gemm(g);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(s.m * s.n * s.k) / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: sgemm_rate [--repeats N]\n");
      return 2;
    }
  }
#if defined(REMAT_HAVE_BLAS)
  const char* engine = "OpenBLAS";
#else
  const char* engine = "portable kernels";
#endif
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("# remat CPU SGEMM (%s), OPENBLAS_NUM_THREADS=%s, best of %d\n", engine, threads ? threads : "(unset)", repeats);
  std::printf("| product | M | N | K | GFLOP/s |\n|---|---|---|---|---|\n");
  const Shape shapes[] = {
      {"square", 1024, 1024, 1024},
      {"ResNet-20 stage 1 conv, one image", 16, 1024, 144},
      {"ResNet-20 stage 3 conv, one image", 64, 64, 576},
  };
  for (const Shape& s : shapes) {
    std::printf("| %s | %lld | %lld | %lld | %.1f |\n", s.what, static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), rate(s, repeats));
  }
  return 0;
}
