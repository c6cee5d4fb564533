// The CUDA backend's profile (backends/device_profile.h).
#ifndef REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_
#define REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_

#include "backends/device_profile.h"

namespace remat {

/// A discrete GPU, pinned host memory, copies on their own stream. The copy rate (4.8e10 B/s)
/// and compute rate (2.0e13 FLOP/s, float32 products without TF32) are what bench/spill_time
/// measured on an NVIDIA H200 (docs/benchmarks.md, "CUDA"). 256 bytes is what cudaMalloc
/// returns and what cuBLAS wants for its fastest kernels. 16-bit float tensors are read as they
/// are by the elementwise and row kernels, widened to float32 on the device for the other ops
/// (backends/gpu/ops/widening.h), matmul's operands natively.
constexpr DeviceProfile kCudaProfile = {
    "cuda", 256,        false, 4.8e10, 2.0e13,
    true,   256 * 1024, true,  true,   WideningRule::kGpuHalfOperands};

}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_PROFILE_H_
