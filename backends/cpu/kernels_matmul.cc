// kMatMul: C = alpha * op(A) * op(B) in the batched, broadcast and reduce shape modes.
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels_internal.h"

namespace remat {
namespace cpu {

remat_status matmul(const KernelArgs& args) {
  const MatmulShape shape = matmul_shape(*args.call);
  Gemm g{};
  g.trans_a = shape.trans_a;
  g.trans_b = shape.trans_b;
  g.m = shape.m;
  g.k = shape.k;
  g.n = shape.n;
  g.alpha = fattr(*args.call, 0, 1.0f);
  g.lda = shape.a_cols;
  g.ldb = shape.b_cols;
  g.ldc = g.n;
  g.beta = 0.0f;
  g.pack = static_cast<float*>(args.scratch);
  const float* a = in_f32(args, 0);
  const float* b = in_f32(args, 1);
  float* c = out_f32(args, 0);
  const bool trans_a = shape.trans_a, trans_b = shape.trans_b;
  const int64_t batch_a = shape.batch_a;
  const int64_t a_stride = shape.a_rows * shape.a_cols, b_stride = shape.b_rows * shape.b_cols;
  const int64_t c_stride = g.m * g.n;

  if (shape.mode == MatmulMode::kReduce) {
    // Reduce mode (weight gradients): C = sum over the batch.
    g.c = c;
    if (trans_a && !trans_b) {
      // The stacked A^T and B are contiguous along K: one GEMM with K = batch * K.
      g.a = a;
      g.b = b;
      g.k *= batch_a;
      gemm(g);
      return REMAT_OK;
    }
    for (int64_t i = 0; i < batch_a; ++i) {
      g.a = a + i * a_stride;
      g.b = b + i * b_stride;
      g.beta = i == 0 ? 0.0f : 1.0f;
      gemm(g);
    }
    return REMAT_OK;
  }
  if (shape.mode == MatmulMode::kBroadcast) {
    // Broadcast mode: every batch entry shares B.
    if (!trans_a) {
      // The stacked A rows are one [batch * M, K] matrix: one GEMM.
      g.a = a;
      g.b = b;
      g.c = c;
      g.m *= batch_a;
      gemm(g);
      return REMAT_OK;
    }
    for (int64_t i = 0; i < batch_a; ++i) {
      g.a = a + i * a_stride;
      g.b = b;
      g.c = c + i * c_stride;
      gemm(g);
    }
    return REMAT_OK;
  }
  for (int64_t i = 0; i < batch_a; ++i) {
    g.a = a + i * a_stride;
    g.b = b + i * b_stride;
    g.c = c + i * c_stride;
    gemm(g);
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
