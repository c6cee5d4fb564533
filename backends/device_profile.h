// A backend's profile: the facts about a kind of device that the compiler plans for, the
// runtime binds memory by and the CLI offers as defaults. Each backend folder declares its own
// (backends/NAME/NAME_profile.h); backends/device_profiles.h lists them all.
#ifndef REMAT_BACKENDS_DEVICE_PROFILE_H_
#define REMAT_BACKENDS_DEVICE_PROFILE_H_

#include <stdint.h>

namespace remat {

/// How a backend runs the ops of a 16-bit plan (f16, bf16 tensors) in float32: the rule that sets
/// the widening workspace it allocates beside the arena (compiler/precision.h: workspace_bytes).
/// On every rule the data movement ops whose tensors share one dtype move their bytes
/// (backends/shared/widening_slices.h: moves_bytes).
enum class WideningRule : uint8_t {
  /// Every other op's 16-bit tensors widened whole into the workspace (a backend without 16-bit
  /// floats: it refuses such plans, so never used).
  kWhole,
  /// The CPU backend's (backends/cpu/widening.h): the elementwise ops widened a chunk at a time
  /// on the stack, fused attention a few batch items at a time, and the products', bias_add's,
  /// reduce_leading's, the embedding's, batch norm's and layer norm's 16-bit rows read as they
  /// are.
  kCpu,
  /// The GPU backends' (backends/gpu/ops/widening.h): the ops of plan/ops.h's gpu_reads_16_bit,
  /// embedding_grad's dy and batch norm's [N, C, ...] tensors read and written as they are; fused
  /// attention and products over a batch are widened a chunk of their batch at a time
  /// (kGpuWideningChunkBytes), every other op whole.
  kGpu,
  /// kGpu, and matmul reads 16-bit operands A and B of its product's type as they are where
  /// both are of that type or float32 (the CUDA backend: cuBLAS GemmEx).
  kGpuHalfOperands,
};

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
  WideningRule widening;     ///< How it runs a 16-bit plan's ops in float32, which sets the
                             ///< workspace beside the arena; the compiler's figure follows it.
};

}  // namespace remat

#endif  // REMAT_BACKENDS_DEVICE_PROFILE_H_
