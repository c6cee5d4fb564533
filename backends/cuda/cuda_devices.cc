// Listing the CUDA devices this machine has, through cudart only: never loads cuBLAS, so
// `remat devices` and other listings do not pay its start-up cost.
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_backend.h"

namespace remat {

int list_cuda_devices(char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return -1;
  out[0] = '\0';
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(out, capacity, "(cuda: unavailable: cudaGetDeviceCount failed: %s (%s))\n",
             cudaGetErrorName(e), cudaGetErrorString(e));
    return 0;
  }
  if (count <= 0) {
    snprintf(out, capacity, "(cuda: unavailable: no CUDA device found)\n");
    return 0;
  }
  size_t used = 0;
  for (int d = 0; d < count && used + 1 < capacity; ++d) {
    cudaDeviceProp prop;
    const cudaError_t pe = cudaGetDeviceProperties(&prop, d);
    int n;
    if (pe != cudaSuccess) {
      cudaGetLastError();
      n = snprintf(out + used, capacity - used, "cuda:%d  (properties unreadable: %s)\n", d,
                   cudaGetErrorName(pe));
    } else {
      n = snprintf(
          out + used, capacity - used, "cuda:%d  %s (sm_%d%d, %llu MiB, %d multiprocessors)\n", d,
          prop.name, prop.major, prop.minor,
          static_cast<unsigned long long>(prop.totalGlobalMem >> 20), prop.multiProcessorCount);
    }
    if (n < 0) break;
    used = used + static_cast<size_t>(n) < capacity ? used + static_cast<size_t>(n) : capacity - 1;
  }
  return count;
}

}  // namespace remat
