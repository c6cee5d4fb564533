// Host memory where a data-parallel plan's buckets of gradients wait while the session's
// communicator sums them over the ranks (docs/data-parallel.md). A communicator sums arrays in
// host memory; a GPU backend's arena is device memory: allreduce_start copies the bucket's
// tensors into the bucket's slot here and hands the slot to the communicator, allreduce_wait
// copies the sums back (backends/gpu/ops/allreduce.cc). Every bucket has a slot of its own, as
// several buckets may be in flight at once; the slots are laid out and allocated once, when the
// backend prepares the plan, so a step allocates nothing.
#ifndef REMAT_BACKENDS_GPU_HOST_STAGING_H_
#define REMAT_BACKENDS_GPU_HOST_STAGING_H_

#include <stdint.h>

#include "plan/allreduce_slots.h"
#include "runtime/backend.h"

namespace remat {
namespace gpu {

/// The host slots of a plan's buckets: one per allreduce_start, its inputs one after the other,
/// laid out and allocated as plan/allreduce_slots.h says.
class HostStaging {
 public:
  HostStaging() = default;
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging();

  /// Lays out a slot for the bucket of every allreduce_start of |calls| and allocates them
  /// (through the port), replacing any earlier layout; a plan without one allocates nothing.
  /// Refuses a bucket number at or past the count of allreduce_start ops, or one started twice
  /// (REMAT_ERROR_FAILED_PRECONDITION, naming the op); REMAT_ERROR_RESOURCE_EXHAUSTED, with the
  /// bytes, when the host has no memory for them.
  remat_status prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err);

  /// Where bucket |bucket|'s slot starts, or nullptr when prepare() laid out no such bucket. Its
  /// arrays are the inputs of the bucket's allreduce_start, in order, each array_bytes() long.
  uint8_t* slot(uint32_t bucket) const;

  /// Bytes that float32 tensor |t| takes in a slot, its alignment padding included.
  static uint64_t array_bytes(const TensorRef& t);

  /// Bytes of every slot together.
  uint64_t bytes() const { return bytes_; }

  /// The first slot's first byte (nullptr without slots): every slot lies in [base(), base() +
  /// bytes()), for a backend that page-locks them.
  uint8_t* base() const { return memory_; }

  /// bytes() rounded up to whole pages: what was allocated at base().
  uint64_t page_bytes() const { return allreduce_slot_pages(bytes_); }

 private:
  void release();

  uint8_t* memory_ = nullptr;    ///< Every slot, in page_bytes() allocated bytes.
  uint64_t bytes_ = 0;           ///< Bytes the slots take of it.
  uint64_t* offsets_ = nullptr;  ///< Each bucket's slot, as a byte offset into memory_.
  uint32_t buckets_ = 0;         ///< Entries of offsets_.
};

}  // namespace gpu
}  // namespace remat

#endif  // REMAT_BACKENDS_GPU_HOST_STAGING_H_
