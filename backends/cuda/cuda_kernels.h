// Private to the CUDA backend: where the shared GPU kernels are (backends/cuda/gpu_kernels.cu,
// compiled by nvcc), for host C++ compiled by the C++ compiler.
#ifndef REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_
#define REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_

#include "backends/gpu/abi.h"

namespace remat {
namespace cuda {

/// The address of kernel |id| (its host stub), as cudaLaunchKernel takes it.
const void* kernel_address(gpu::KernelId id);

/// Threads per block of every launch: a power of two (the work-group sums need one) that any
/// kernel of the shared source can run with.
constexpr int kBlock = REMAT_GPU_GROUP_SIZE;

}  // namespace cuda
}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_
