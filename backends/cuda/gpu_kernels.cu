// The shared GPU kernels (backends/gpu/kernels, also the OpenCL program) compiled as CUDA C++,
// and their addresses for cudaLaunchKernel.
//
// The kernel files are included inside namespace remat::gpu::device after the CUDA dialect:
// its short type names (uint, ulong, acc_t) stay out of the global namespace, and the kernels'
// host stubs cannot meet the host op functions of the same names (backends/gpu/ops/ops.h).
#include "backends/cuda/cuda_kernels.h"
#include "backends/gpu/abi.h"
#include "plan/philox.h"

namespace remat {
namespace gpu {
namespace device {

#include "backends/gpu/dialect_cuda.cuh"

#include "backends/gpu/kernels/common.cl"
// half.cl's conversions before the kernels that load and store 16-bit elements through them.
#include "backends/gpu/kernels/half.cl"
#include "backends/gpu/kernels/attention.cl"
#include "backends/gpu/kernels/batchnorm.cl"
#include "backends/gpu/kernels/conv.cl"
#include "backends/gpu/kernels/data.cl"
#include "backends/gpu/kernels/elementwise.cl"
#include "backends/gpu/kernels/loss.cl"
#include "backends/gpu/kernels/norm.cl"
#include "backends/gpu/kernels/optim.cl"
#include "backends/gpu/kernels/pool.cl"

}  // namespace device
}  // namespace gpu

namespace cuda {

const void* kernel_address(gpu::KernelId id) {
  static const void* const kAddresses[gpu::kKernelCount] = {
#define REMAT_CUDA_KERNEL_ADDRESS(name) reinterpret_cast<const void*>(&gpu::device::name),
      REMAT_GPU_KERNELS(REMAT_CUDA_KERNEL_ADDRESS)
#undef REMAT_CUDA_KERNEL_ADDRESS
  };
  return kAddresses[id];
}

}  // namespace cuda
}  // namespace remat
