// The null backend's profile (backends/device_profile.h): a skeleton's placeholders.
#ifndef REMAT_BACKENDS_NULL_NULL_PROFILE_H_
#define REMAT_BACKENDS_NULL_NULL_PROFILE_H_

#include "backends/device_profile.h"

namespace remat {

/// COPY-ME: a new backend states its device's alignment, whether it runs on host memory, its
/// copy bandwidth and compute rate, whether copies overlap compute, its staging size, whether it
/// honours TF32, whether its kernels take 16-bit float tensors and how it widens them (its
/// workspace rule).
constexpr DeviceProfile kNullProfile = {"null", 64, false, 1e10,  1e10,
                                        false,  0,  false, false, WideningRule::kWhole};

}  // namespace remat

#endif  // REMAT_BACKENDS_NULL_NULL_PROFILE_H_
