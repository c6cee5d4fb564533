// The matmul ops' GEMM (OpenBLAS or the packed engine) and the packed and dot-product engines'
// choice of instruction set.
#include "backends/cpu/gemm/gemm.h"

#include "backends/cpu/isa/isa.h"

#if REMAT_HAVE_BLAS
#include <cblas.h>

#include <limits>
#endif

namespace remat {
namespace cpu {

void packed_gemm(const Gemm& g) { REMAT_CPU_BEST(packed_gemm)(g); }

void dot_gemm(const GemmDot& g) { REMAT_CPU_BEST(dot_gemm)(g); }

const char* packed_gemm_isa() {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kBaseline: break;
  }
#endif
  return "baseline";
}

#if REMAT_HAVE_BLAS

void gemm_on_calling_thread() {
  // OpenBLAS's own workers spin in sched_yield for a long while after each call and took the
  // cores from remat's kernel threads between products: step times varied by up to 40%.
  openblas_set_num_threads(1);
}

void gemm(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  // Sizes and row lengths past OpenBLAS's integer (a verified tensor may hold 2^40 elements, a
  // head_matmul's interleaved rows are that long) go to the packed engine, which takes int64.
  constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
  if (g.m > kBlasMax || g.n > kBlasMax || g.k > kBlasMax || g.lda > kBlasMax || g.ldb > kBlasMax ||
      g.ldc > kBlasMax) {
    packed_gemm(g);
    return;
  }
  // OpenBLAS wants ld >= 1 even for empty operands.
  auto ld = [](int64_t v) { return static_cast<blasint>(v > 0 ? v : 1); };
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(g.m),
              static_cast<blasint>(g.n), static_cast<blasint>(g.k), g.alpha, g.a, ld(g.lda), g.b,
              ld(g.ldb), g.beta, g.c, ld(g.ldc));
}

#else

void gemm_on_calling_thread() {}

void gemm(const Gemm& g) { packed_gemm(g); }

#endif

}  // namespace cpu
}  // namespace remat
