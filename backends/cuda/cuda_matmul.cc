// kMatMul on cuBLAS in the three shape modes of plan/matmul_shape.h, and kHeadMatMul as strided
// batches of per-head products. cuBLAS is column-major: the
// row-major product C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, which
// reads the row-major buffers as they are (the transposes become the operand order).
#include <limits.h>

#include "backends/cuda/cuda_backend_impl.h"
#include "backends/shared/op_args.h"
#include "backends/shared/widening_slices.h"
#include "plan/ops.h"

namespace remat {
namespace cuda {
namespace {

// One row-major GEMM (or a strided batch of them): C = alpha * op(A) op(B) + beta * C, A and B
// float32 or both of one 16-bit type (|ab|, |ab_bytes| an element), C float32.
struct Gemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;  // Stored row lengths.
  const uint8_t* a;
  const uint8_t* b;
  float* c;
  cudaDataType ab;
  int64_t ab_bytes;
  float alpha, beta;
  int64_t batch;  // 1: one GEMM.
  int64_t stride_a, stride_b, stride_c;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }
int ld(int64_t v) { return static_cast<int>(v > 0 ? v : 1); }

}  // namespace

cublasStatus_t CudaBackend::gemm(cublasOperation_t op_b, cublasOperation_t op_a, int n, int m,
                                 int k, const float* alpha, const void* b, int ldb, const void* a,
                                 int lda, const float* beta, float* c, int ldc, cudaDataType ab,
                                 bool tf32) {
  if (ab == CUDA_R_32F && !tf32) {
    return blas_.sgemm(blas_handle_, op_b, op_a, n, m, k, alpha, static_cast<const float*>(b), ldb,
                       static_cast<const float*>(a), lda, beta, c, ldc);
  }
  // 16-bit operands accumulate in float32 (tensor cores); float32 ones in TF32 where asked.
  const cublasComputeType_t compute =
      ab == CUDA_R_32F ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  return blas_.gemm_ex(blas_handle_, op_b, op_a, n, m, k, alpha, b, ab, ldb, a, ab, lda, beta, c,
                       CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t CudaBackend::gemm_batched(cublasOperation_t op_b, cublasOperation_t op_a, int n,
                                         int m, int k, const float* alpha, const void* b, int ldb,
                                         long long stride_b, const void* a, int lda,
                                         long long stride_a, const float* beta, float* c, int ldc,
                                         long long stride_c, int batch, cudaDataType ab,
                                         bool tf32) {
  if (ab == CUDA_R_32F && !tf32) {
    return blas_.sgemm_strided_batched(
        blas_handle_, op_b, op_a, n, m, k, alpha, static_cast<const float*>(b), ldb, stride_b,
        static_cast<const float*>(a), lda, stride_a, beta, c, ldc, stride_c, batch);
  }
  const cublasComputeType_t compute =
      ab == CUDA_R_32F ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  return blas_.gemm_strided_batched_ex(blas_handle_, op_b, op_a, n, m, k, alpha, b, ab, ldb,
                                       stride_b, a, ab, lda, stride_a, beta, c, CUDA_R_32F, ldc,
                                       stride_c, batch, compute, CUBLAS_GEMM_DEFAULT);
}

// GemmEx takes A and B of one type: the product's, or float32 ones narrowed to it.
bool CudaBackend::takes_half_operands(const OpCall& call) const {
  return matmul_operands_of_one_type(call);
}

remat_status CudaBackend::gemm(const gpu::GemmBatch& g, const OpCall& call, ErrorBuffer* err) {
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k) || !fits_int(g.a.ld) ||
      !fits_int(g.b.ld) || !fits_int(g.c.ld) || !fits_int(g.batch)) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "op %u (%s): a product of M %lld, N %lld, K %lld, batch %lld exceeds "
                     "cuBLAS's int",
                     call.index, op_name(call.code), static_cast<long long>(g.m),
                     static_cast<long long>(g.n), static_cast<long long>(g.k),
                     static_cast<long long>(g.batch));
  }
  const float* a = reinterpret_cast<const float*>(address(g.a.region, g.a.offset));
  const float* b = reinterpret_cast<const float*>(address(g.b.region, g.b.offset));
  float* c = reinterpret_cast<float*>(address(g.c.region, g.c.offset));
  // C^T = op(B)^T op(A)^T in cuBLAS's column-major terms, as in matmul.
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const float beta = g.accumulate ? 1.0f : 0.0f;
  const cublasStatus_t st =
      g.batch == 1 ? gemm(op_b, op_a, n, m, k, &g.alpha, b, ld(g.b.ld), a, ld(g.a.ld), &beta, c,
                          ld(g.c.ld), CUDA_R_32F, tf32_)
                   : gemm_batched(op_b, op_a, n, m, k, &g.alpha, b, ld(g.b.ld), g.b.stride, a,
                                  ld(g.a.ld), g.a.stride, &beta, c, ld(g.c.ld), g.c.stride,
                                  static_cast<int>(g.batch), CUDA_R_32F, tf32_);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return set_error(err, REMAT_ERROR_INTERNAL,
                     "op %u (%s): cuBLAS GEMM (M %d, N %d, K %d, batch %lld) failed: %s",
                     call.index, op_name(call.code), m, n, k, static_cast<long long>(g.batch),
                     blas_.status_name(st));
  }
  return REMAT_OK;
}

remat_status CudaBackend::matmul(const OpCall& call, bool accumulate, ErrorBuffer* err) {
  const TensorRef& ta = *call.inputs[0];
  const TensorRef& tb = *call.inputs[1];
  const TensorRef& tc = *call.outputs[0];
  const MatmulShape shape = matmul_shape(call);
  if (shape.mode == MatmulMode::kInvalid) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (matmul): the batches of A, B and C fit no shape mode", call.index);
  }
  Gemm g{};
  g.trans_a = shape.trans_a;
  g.trans_b = shape.trans_b;
  g.m = shape.m;
  g.k = shape.k;
  g.n = shape.n;
  g.lda = shape.a_cols;
  g.ldb = shape.b_cols;
  g.ldc = g.n;
  g.a = address(ta);
  g.b = address(tb);
  g.c = reinterpret_cast<float*>(address(tc));
  // 16-bit operands (takes_half_operands: both of the product's type, C float32) go to GemmEx.
  g.ab = ta.dtype == REMAT_DTYPE_BF16  ? CUDA_R_16BF
         : ta.dtype == REMAT_DTYPE_F16 ? CUDA_R_16F
                                       : CUDA_R_32F;
  g.ab_bytes = g.ab == CUDA_R_32F ? 4 : 2;
  g.alpha = fattr(call, attr::matmul::alpha);
  g.beta = accumulate ? 1.0f : 0.0f;
  g.batch = 1;
  const int64_t batch_a = shape.batch_a;
  const int64_t a_stride = shape.a_rows * shape.a_cols, b_stride = shape.b_rows * shape.b_cols;
  const int64_t c_stride = g.m * g.n;
  bool loop_reduce = false;  // Reduce mode that cannot be folded: one GEMM per batch entry.

  if (shape.mode == MatmulMode::kReduce) {
    // Reduce mode (weight gradients): C = sum over the batch.
    if (g.trans_a && !g.trans_b) {
      g.k *= batch_a;  // Stacked A^T and B are contiguous along K: one GEMM.
    } else {
      loop_reduce = true;
    }
  } else if (shape.mode == MatmulMode::kBroadcast) {
    // Broadcast mode: B shared by every batch entry.
    if (!g.trans_a) {
      g.m *= batch_a;  // The stacked A rows are one [batch * M, K] matrix: one GEMM.
    } else {
      g.batch = batch_a;
      g.stride_a = a_stride;
      g.stride_b = 0;
      g.stride_c = c_stride;
    }
  } else {
    g.batch = batch_a;
    g.stride_a = a_stride;
    g.stride_b = b_stride;
    g.stride_c = c_stride;
  }
  if (g.m == 0 || g.n == 0 || batch_a == 0) return REMAT_OK;
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k) || !fits_int(g.lda) || !fits_int(g.ldb) ||
      !fits_int(g.ldc) || !fits_int(g.batch)) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "op %u (matmul): M %lld, N %lld, K %lld or batch %lld exceeds cuBLAS's int",
                     call.index, static_cast<long long>(g.m), static_cast<long long>(g.n),
                     static_cast<long long>(g.k), static_cast<long long>(g.batch));
  }
  if (g.k == 0 && accumulate) return REMAT_OK;  // C += an empty sum
  if (g.k == 0) {  // An empty sum: C = 0 (cuBLAS would leave C as beta * C).
    const cudaError_t e = cudaMemsetAsync(g.c, 0, static_cast<size_t>(tc.bytes), main_);
    if (e == cudaSuccess) return REMAT_OK;
    return set_error(err, REMAT_ERROR_INTERNAL, "op %u (matmul): cudaMemsetAsync failed: %s",
                     call.index, cudaGetErrorName(e));
  }
  // C^T (n x m, ld n) = op(B)^T (n x k) * op(A)^T (k x m): B is cuBLAS's first operand.
  const cublasOperation_t op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (loop_reduce) {
    // Fixed order, accumulating with beta = 1 after the first: deterministic.
    for (int64_t i = 0; i < batch_a && st == CUBLAS_STATUS_SUCCESS; ++i) {
      const float beta = i == 0 ? g.beta : 1.0f;
      st = gemm(op_b, op_a, n, m, k, &g.alpha, g.b + i * b_stride * g.ab_bytes, ld(g.ldb),
                g.a + i * a_stride * g.ab_bytes, ld(g.lda), &beta, g.c, ld(g.ldc), g.ab, tf32_);
    }
  } else if (g.batch == 1) {
    st = gemm(op_b, op_a, n, m, k, &g.alpha, g.b, ld(g.ldb), g.a, ld(g.lda), &g.beta, g.c,
              ld(g.ldc), g.ab, tf32_);
  } else {
    st = gemm_batched(op_b, op_a, n, m, k, &g.alpha, g.b, ld(g.ldb), g.stride_b, g.a, ld(g.lda),
                      g.stride_a, &g.beta, g.c, ld(g.ldc), g.stride_c, static_cast<int>(g.batch),
                      g.ab, tf32_);
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    return set_error(err, REMAT_ERROR_INTERNAL,
                     "op %u (matmul): cuBLAS %s (M %d, N %d, K %d) failed: %s", call.index,
                     g.ab == CUDA_R_32F ? "SGEMM" : "GemmEx", m, n, k, blas_.status_name(st));
  }
  return REMAT_OK;
}

remat_status CudaBackend::head_matmul(const OpCall& call, ErrorBuffer* err) {
  const TensorRef& tc = *call.outputs[0];
  const HeadMatmulShape shape = head_matmul_shape(call);
  if (!shape.valid) {
    return set_error(
        err, REMAT_ERROR_INVALID_ARGUMENT,
        "op %u (head_matmul): A, B and C do not hold one count of whole heads' matrices",
        call.index);
  }
  const int64_t heads = shape.heads, products = shape.c.products;
  if (shape.m == 0 || shape.n == 0 || products == 0) return REMAT_OK;
  float* c = reinterpret_cast<float*>(address(tc));
  if (shape.k == 0) {  // Every product an empty sum: C = 0.
    const cudaError_t e = cudaMemsetAsync(c, 0, static_cast<size_t>(tc.bytes), main_);
    if (e == cudaSuccess) return REMAT_OK;
    return set_error(err, REMAT_ERROR_INTERNAL, "op %u (head_matmul): cudaMemsetAsync failed: %s",
                     call.index, cudaGetErrorName(e));
  }
  const float* a = reinterpret_cast<const float*>(address(*call.inputs[0]));
  const float* b = reinterpret_cast<const float*>(address(*call.inputs[1]));
  const float alpha = fattr(call, attr::head_matmul::alpha), beta = 0.0f;
  // One strided batch of every product where each operand's heads and entries are one stride
  // apart (no operand interleaved, or one head), else one batch of |heads| per outer entry.
  auto evenly = [&](const HeadOperand& o) { return o.outer_stride == heads * o.head_stride; };
  const bool one_batch = heads == 1 || (evenly(shape.a) && evenly(shape.b) && evenly(shape.c));
  const int64_t batch = one_batch ? products : heads, outer = one_batch ? 1 : products / heads;
  if (!fits_int(shape.m) || !fits_int(shape.n) || !fits_int(shape.k) || !fits_int(shape.a.ld) ||
      !fits_int(shape.b.ld) || !fits_int(shape.c.ld) || !fits_int(batch)) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "op %u (head_matmul): M %lld, N %lld, K %lld, a row length or a batch of %lld "
                     "products exceed "
                     "cuBLAS's int",
                     call.index, static_cast<long long>(shape.m), static_cast<long long>(shape.n),
                     static_cast<long long>(shape.k), static_cast<long long>(batch));
  }
  // C^T = op(B)^T op(A)^T in cuBLAS's column-major terms, as in matmul.
  const cublasOperation_t op_b = shape.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = shape.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(shape.m), n = static_cast<int>(shape.n),
            k = static_cast<int>(shape.k);
  const int64_t stride_a = heads == 1 ? shape.a.outer_stride : shape.a.head_stride;
  const int64_t stride_b = heads == 1 ? shape.b.outer_stride : shape.b.head_stride;
  const int64_t stride_c = heads == 1 ? shape.c.outer_stride : shape.c.head_stride;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  for (int64_t o = 0; o < outer && st == CUBLAS_STATUS_SUCCESS; ++o) {
    const int64_t first = o * heads;
    st = gemm_batched(op_b, op_a, n, m, k, &alpha, b + shape.b.offset(first, heads), ld(shape.b.ld),
                      stride_b, a + shape.a.offset(first, heads), ld(shape.a.ld), stride_a, &beta,
                      c + shape.c.offset(first, heads), ld(shape.c.ld), stride_c,
                      static_cast<int>(batch), CUDA_R_32F, tf32_);
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    return set_error(
        err, REMAT_ERROR_INTERNAL,
        "op %u (head_matmul): cuBLAS strided batched SGEMM (M %d, N %d, K %d) failed: %s",
        call.index, m, n, k, blas_.status_name(st));
  }
  return REMAT_OK;
}

}  // namespace cuda
}  // namespace remat
