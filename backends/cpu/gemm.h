// The CPU backend's matrix product engine: OpenBLAS's cblas_sgemm where the build has it, else
// a portable packed GEMM. Used by matmul and by the convolutions' im2col products.
#ifndef REMAT_BACKENDS_CPU_GEMM_H_
#define REMAT_BACKENDS_CPU_GEMM_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// Row-major GEMM on one matrix: C = alpha * op(A) op(B) + beta * C, beta in {0, 1}.
/// op(A) is M x K, op(B) is K x N; ld* are the stored row lengths.
struct Gemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
  float* pack;  ///< Packing scratch of scratch_bytes() (portable path), from the backend.
};

/// Computes |g|. Summation order depends on the shapes only: the same call gives the same bits.
void gemm(const Gemm& g);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_GEMM_H_
