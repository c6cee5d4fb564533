// The host memory a data-parallel plan's buckets take on a GPU backend, which sums them through
// host copies (backends/gpu/host_staging.h): every bucket a slot of its own, each array of it at
// a multiple of kAllreduceSlotAlignment bytes, all the slots in whole pages. One rule for the
// backends that allocate the slots and for `remat size`, which reports them.
#ifndef REMAT_PLAN_ALLREDUCE_SLOTS_H_
#define REMAT_PLAN_ALLREDUCE_SLOTS_H_

#include <stdint.h>

namespace remat {

/// Alignment of every array of a slot, in bytes.
constexpr uint64_t kAllreduceSlotAlignment = 64;

/// The slots are allocated page-aligned, a whole number of these: a backend that page-locks them
/// (CUDA) locks pages of their own, never one shared with other memory.
constexpr uint64_t kAllreduceSlotPageBytes = 4096;

/// Bytes a float32 array of |numel| elements takes in a slot, its padding included.
constexpr uint64_t allreduce_slot_array_bytes(uint64_t numel) {
  return (numel * 4 + kAllreduceSlotAlignment - 1) / kAllreduceSlotAlignment *
         kAllreduceSlotAlignment;
}

/// |bytes| of slots rounded up to whole pages: what is allocated for them.
constexpr uint64_t allreduce_slot_pages(uint64_t bytes) {
  return (bytes + kAllreduceSlotPageBytes - 1) / kAllreduceSlotPageBytes * kAllreduceSlotPageBytes;
}

}  // namespace remat

#endif  // REMAT_PLAN_ALLREDUCE_SLOTS_H_
