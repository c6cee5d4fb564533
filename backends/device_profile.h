// A backend's profile: the facts about a kind of device that the compiler plans for, the
// runtime binds memory by and the CLI offers as defaults. Each backend folder declares its own
// (backends/NAME/NAME_profile.h); backends/device_profiles.h lists them all.
#ifndef REMAT_BACKENDS_DEVICE_PROFILE_H_
#define REMAT_BACKENDS_DEVICE_PROFILE_H_

#include <stdint.h>

namespace remat {

/// What the compiler, the runtime and the CLI need to know about one backend.
struct DeviceProfile {
  const char* name;          ///< Backend name as users write it: "cpu", "opencl", "cuda".
  uint32_t alignment;        ///< Bytes every region base and tensor offset is aligned to in
                             ///< plans meant for it (a power of two).
  bool binds_host_memory;    ///< Runs on the caller's (or session's) host arena and persistent
                             ///< region; false: it allocates device memory of its own.
  double copy_bandwidth;     ///< Spill cost model: host <-> device bytes per second.
  double compute_rate;       ///< Spill cost model: FLOPs per second.
  bool asynchronous_copies;  ///< Spill cost model: copies overlap compute.
  uint32_t staging_bytes;    ///< Host staging buffer for uploads of initial parameters (0:
                             ///< the backend reads host memory directly, no staging).
  bool tf32_matmuls;         ///< Honours a plan's matmul_precision tf32 (RegionSetup); false:
                             ///< computes float32 products whatever the plan asks.
  bool half_floats;          ///< Runs ops on 16-bit float tensors (f16, bf16); false: the
                             ///< session refuses a plan where any op but a copy between
                             ///< regions has one (REMAT_ERROR_UNIMPLEMENTED).
  bool widens_in_chunks;     ///< Widens the elementwise ops a chunk at a time and fused
                             ///< attention a few batch items at a time, and reads the
                             ///< products', bias_add's and layer norm's 16-bit tensors as they
                             ///< are (the CPU backend: backends/cpu/widening.h); false: every
                             ///< op's 16-bit tensors whole. The compiler's workspace figure
                             ///< follows it.
};

}  // namespace remat

#endif  // REMAT_BACKENDS_DEVICE_PROFILE_H_
