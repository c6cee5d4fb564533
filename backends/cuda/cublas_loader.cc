// Loads cuBLAS with dlopen at backend creation (see cublas_loader.h for why).
#include "backends/cuda/cublas_loader.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

namespace remat {
namespace cuda {
namespace {

#define REMAT_STR2(x) #x
#define REMAT_STR(x) REMAT_STR2(x)
// The major version the headers were compiled against: its ABI is the one the prototypes use.
constexpr const char* kSoname = "libcublas.so." REMAT_STR(CUBLAS_VER_MAJOR);

// The folder libcudart was loaded from, where a toolkit keeps libcublas too ("" if unknown).
void cudart_folder(char* out, size_t capacity) {
  out[0] = '\0';
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) == 0 ||
      info.dli_fname == nullptr) {
    return;
  }
  const char* slash = strrchr(info.dli_fname, '/');
  if (slash == nullptr) return;
  const size_t length = static_cast<size_t>(slash - info.dli_fname);
  if (length + 1 > capacity) return;
  memcpy(out, info.dli_fname, length);
  out[length] = '\0';
}

template <typename F>
bool resolve(void* library, const char* name, F* out, ErrorBuffer* err, remat_status* status) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  if (*out != nullptr) return true;
  *status = set_error(err, REMAT_ERROR_UNAVAILABLE, "cuda: %s has no symbol %s", kSoname, name);
  return false;
}

}  // namespace

remat_status load_cublas(Cublas* out, ErrorBuffer* err) {
  memset(out, 0, sizeof(*out));
  void* library = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  char first_error[256] = "";
  if (library == nullptr) {
    snprintf(first_error, sizeof(first_error), "%s", dlerror());
    char folder[512];
    cudart_folder(folder, sizeof(folder));
    if (folder[0] != '\0') {
      char path[600];
      snprintf(path, sizeof(path), "%s/%s", folder, kSoname);
      library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (library == nullptr) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "cuda: cannot load cuBLAS (%s): %s", kSoname,
                     first_error);
  }
  out->library = library;
  remat_status status = REMAT_OK;
  const bool ok =
      resolve(library, "cublasCreate_v2", &out->create, err, &status) &&
      resolve(library, "cublasDestroy_v2", &out->destroy, err, &status) &&
      resolve(library, "cublasSetStream_v2", &out->set_stream, err, &status) &&
      resolve(library, "cublasSetMathMode", &out->set_math_mode, err, &status) &&
      resolve(library, "cublasSetAtomicsMode", &out->set_atomics_mode, err, &status) &&
      resolve(library, "cublasSetWorkspace_v2", &out->set_workspace, err, &status) &&
      resolve(library, "cublasSgemm_v2", &out->sgemm, err, &status) &&
      resolve(library, "cublasSgemmStridedBatched", &out->sgemm_strided_batched, err, &status) &&
      resolve(library, "cublasGemmEx", &out->gemm_ex, err, &status) &&
      resolve(library, "cublasGemmStridedBatchedEx", &out->gemm_strided_batched_ex, err, &status) &&
      resolve(library, "cublasGetStatusName", &out->status_name, err, &status);
  return ok ? REMAT_OK : status;
}

}  // namespace cuda
}  // namespace remat
