// Every backend's profile, compiled in or not: the compiler plans for a CUDA device on a
// machine without CUDA, so the list does not depend on what this build runs.
#ifndef REMAT_BACKENDS_DEVICE_PROFILES_H_
#define REMAT_BACKENDS_DEVICE_PROFILES_H_

#include <stddef.h>
#include <string.h>

#include "backends/cpu/cpu_profile.h"
#include "backends/cuda/cuda_profile.h"
#include "backends/device_profile.h"
#include "backends/null/null_profile.h"
#include "backends/opencl/opencl_profile.h"

namespace remat {

/// The profiles of every backend remat knows, "cpu" first.
inline constexpr DeviceProfile kDeviceProfiles[] = {kCpuProfile, kOpenclProfile, kCudaProfile,
                                                    kNullProfile};

/// Number of entries of kDeviceProfiles.
inline constexpr size_t kDeviceProfileCount = sizeof(kDeviceProfiles) / sizeof(kDeviceProfiles[0]);

/// The profile of the backend |spec| names ("cuda", "opencl:0:1", ...: the part before the
/// first ':'), or nullptr when no backend has that name or |spec| is null.
inline const DeviceProfile* find_device_profile(const char* spec) {
  if (spec == nullptr) return nullptr;
  const char* colon = strchr(spec, ':');
  const size_t length = colon ? static_cast<size_t>(colon - spec) : strlen(spec);
  for (const DeviceProfile& p : kDeviceProfiles) {
    if (strlen(p.name) == length && strncmp(p.name, spec, length) == 0) return &p;
  }
  return nullptr;
}

}  // namespace remat

#endif  // REMAT_BACKENDS_DEVICE_PROFILES_H_
