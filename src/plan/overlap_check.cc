// Sweep over buffers sorted by start op: O(n log n + n * live) instead of all pairs.
#include "plan/overlap_check.h"

#include <algorithm>

namespace remat {

bool no_overlap_in_time_and_space(const PlacedBuffer* buffers, uint32_t count, uint32_t* order,
                                  uint32_t* out_a, uint32_t* out_b) {
  for (uint32_t i = 0; i < count; ++i) order[i] = i;
  std::sort(order, order + count, [&](uint32_t a, uint32_t b) {
    if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
    return a < b;
  });
  // For each buffer, compare with the buffers that started no later and are still live.
  // Buffers are visited by start; the inner scan stops at the first one that starts later.
  for (uint32_t i = 0; i < count; ++i) {
    const PlacedBuffer& x = buffers[order[i]];
    for (uint32_t j = i + 1; j < count; ++j) {
      const PlacedBuffer& y = buffers[order[j]];
      if (y.first > x.last) break;
      const bool share = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      if (share && x.size > 0 && y.size > 0) {
        *out_a = std::min(order[i], order[j]);
        *out_b = std::max(order[i], order[j]);
        return false;
      }
    }
  }
  return true;
}

}  // namespace remat
