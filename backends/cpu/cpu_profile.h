// The CPU backend's profile (backends/device_profile.h).
#ifndef REMAT_BACKENDS_CPU_CPU_PROFILE_H_
#define REMAT_BACKENDS_CPU_CPU_PROFILE_H_

#include "backends/device_profile.h"
#include "plan/op_subset.h"

namespace remat {

/// The "device" is host memory: copies are memcpy at ~10 GB/s, synchronous (a copy thread
/// would take a core from the GEMM); compute is OpenBLAS-class; 64-byte alignment is a cache
/// line and every SIMD width the kernels use. 16-bit float tensors run widened to float32
/// (widening.h), in every build but a firmware one of a plan without them (plan/op_subset.h).
constexpr DeviceProfile kCpuProfile = {
    "cpu", 64, true, 1e10, 5e10, false, 0, false, kBuildHalfFloats, WideningRule::kCpu};

}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_CPU_PROFILE_H_
