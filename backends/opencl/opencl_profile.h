// The OpenCL backend's profile (backends/device_profile.h).
#ifndef REMAT_BACKENDS_OPENCL_OPENCL_PROFILE_H_
#define REMAT_BACKENDS_OPENCL_OPENCL_PROFILE_H_

#include "backends/device_profile.h"

namespace remat {

/// An embedded or mobile GPU behind a PCIe-3-class link, copies on a second queue. 256-byte
/// alignment suits every device's CL_DEVICE_MEM_BASE_ADDR_ALIGN seen (at most 2048 bits).
/// Initial parameters go up through a 256 KiB staging buffer (one write per 64 Ki floats).
/// 16-bit float tensors are read as they are by the elementwise and row kernels, widened to
/// float32 on the device for the other ops (backends/gpu/ops/widening.h).
constexpr DeviceProfile kOpenclProfile = {"opencl", 256,        false, 8e9,  1e12,
                                          true,     256 * 1024, false, true, WideningRule::kGpu};

}  // namespace remat

#endif  // REMAT_BACKENDS_OPENCL_OPENCL_PROFILE_H_
