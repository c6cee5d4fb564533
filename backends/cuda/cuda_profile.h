// The CUDA backend's profile (backends/device_profile.h).
#ifndef REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_
#define REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_

#include "backends/device_profile.h"

namespace remat {

/// A discrete GPU, pinned host memory over PCIe 4, copies on their own stream. 256 bytes is
/// what cudaMalloc returns and what cuBLAS wants for its fastest kernels. 16-bit float tensors
/// run widened to float32 on the device (backends/gpu/ops/widening.h).
constexpr DeviceProfile kCudaProfile = {"cuda", 256,        false, 2e10, 1e13,
                                        true,   256 * 1024, true,  true};

}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_
