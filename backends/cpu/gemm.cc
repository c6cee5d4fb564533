// The matmul ops' GEMM (OpenBLAS or the packed engine) and the packed and dot-product engines'
// choice of instruction set.
#include "backends/cpu/gemm.h"

#if REMAT_HAVE_BLAS
#include <cblas.h>
#endif

namespace remat {
namespace cpu {
namespace {

// The packed engine the CPU runs best: asked each call (a load and a test), so no state.
using PackedGemm = void (*)(const Gemm&);
PackedGemm best_packed_gemm() {
#if REMAT_GEMM_X86_VARIANTS
  if (__builtin_cpu_supports("avx512f")) return packed_gemm_avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return packed_gemm_avx2;
#endif
  return packed_gemm_baseline;
}

}  // namespace

void packed_gemm(const Gemm& g) { best_packed_gemm()(g); }

void dot_gemm(const GemmDot& g) {
#if REMAT_GEMM_X86_VARIANTS
  if (__builtin_cpu_supports("avx512f")) return dot_gemm_avx512(g);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dot_gemm_avx2(g);
#endif
  dot_gemm_baseline(g);
}

const char* packed_gemm_isa() {
#if REMAT_GEMM_X86_VARIANTS
  const PackedGemm engine = best_packed_gemm();
  if (engine == packed_gemm_avx512) return "avx512";
  if (engine == packed_gemm_avx2) return "avx2";
#endif
  return "baseline";
}

#if REMAT_HAVE_BLAS

void gemm(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  // OpenBLAS wants ld >= 1 even for empty operands.
  auto ld = [](int64_t v) { return static_cast<blasint>(v > 0 ? v : 1); };
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(g.m),
              static_cast<blasint>(g.n), static_cast<blasint>(g.k), g.alpha, g.a, ld(g.lda), g.b,
              ld(g.ldb), g.beta, g.c, ld(g.ldc));
}

#else

void gemm(const Gemm& g) { packed_gemm(g); }

#endif

}  // namespace cpu
}  // namespace remat
