// The invariant every memory plan must keep: tensors live at the same time never share bytes.
// Used by the compiler's planner tests and by the runtime's plan verification.
#ifndef REMAT_PLAN_OVERLAP_CHECK_H_
#define REMAT_PLAN_OVERLAP_CHECK_H_

#include <stddef.h>
#include <stdint.h>

namespace remat {

/// One placed buffer: bytes [offset, offset + size) in use from op |first| to op |last|,
/// inclusive (first == -1: written before the first op).
struct PlacedBuffer {
  uint64_t offset;
  uint64_t size;
  int32_t first;
  int32_t last;
};

/// Finds two buffers of |buffers| (|count| of them) that overlap in time and in space.
/// Returns true when none do. Otherwise returns false and writes their indices to
/// |out_a| < |out_b|. |order| is caller-provided scratch of |count| entries (no allocation:
/// the runtime calls this after session creation set aside its memory).
bool no_overlap_in_time_and_space(const PlacedBuffer* buffers, uint32_t count, uint32_t* order,
                                  uint32_t* out_a, uint32_t* out_b);

}  // namespace remat

#endif  // REMAT_PLAN_OVERLAP_CHECK_H_
