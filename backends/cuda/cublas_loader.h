// cuBLAS loaded at backend creation with dlopen: the runtime library does not link it, so a
// process that never creates a CUDA backend never maps libcublas / libcublasLt (~0.3 s).
#ifndef REMAT_BACKENDS_CUDA_CUBLAS_LOADER_H_
#define REMAT_BACKENDS_CUDA_CUBLAS_LOADER_H_

#include <cublas_v2.h>

#include "runtime/backend.h"

namespace remat {
namespace cuda {

/// The few cuBLAS entry points the backend uses, resolved from the loaded library.
struct Cublas {
  void* library;  ///< dlopen handle; never closed (cuBLAS may hold process-wide state).
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetAtomicsMode) set_atomics_mode;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  // The exported C symbols; the header also overloads them for C++ (a cudaDataType compute
  // type), so decltype cannot name them. Used with CUBLAS_COMPUTE_32F_FAST_TF32 (tf32 plans).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void*, const void*, cudaDataType,
                                            int, long long, const void*, cudaDataType, int,
                                            long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasGetStatusName) status_name;
};

/// Loads libcublas (libcublas.so.<major>, then libcublas.so, then the folder libcudart was
/// loaded from) and resolves every member of |out|. A missing library or symbol gives
/// REMAT_ERROR_UNAVAILABLE with dlerror()'s text.
remat_status load_cublas(Cublas* out, ErrorBuffer* err);

}  // namespace cuda
}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUBLAS_LOADER_H_
