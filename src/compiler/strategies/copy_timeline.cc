// The two-queue timing model of copies against compute (see strategies/copy_timeline.h).
#include "compiler/strategies/copy_timeline.h"

#include <algorithm>
#include <unordered_map>

namespace remat {
namespace compiler {

CopyTimeline simulate_copies(const Graph& graph, double copy_bandwidth, double compute_rate,
                             bool asynchronous_copies) {
  CopyTimeline timeline;
  double now = 0;        // Where the compute queue is.
  double copy_free = 0;  // When the copy queue has finished everything issued so far.
  // When the copy that a wait names is done: a spill is named by its source, a prefetch by
  // its destination (the tensors their waits read).
  std::unordered_map<int, double> done_at;
  for (const Op& op : graph.ops) {
    switch (op.code) {
      case OpCode::kSpill:
      case OpCode::kPrefetch: {
        const int device_tensor = op.code == OpCode::kSpill ? op.inputs[0] : op.outputs[0];
        const double seconds =
            static_cast<double>(graph.tensors[device_tensor].bytes()) / copy_bandwidth;
        timeline.copy_seconds += seconds;
        if (!asynchronous_copies) {
          now += seconds;
          timeline.stall_seconds += seconds;
          break;
        }
        copy_free = std::max(now, copy_free) + seconds;
        done_at[device_tensor] = copy_free;
        break;
      }
      case OpCode::kWait: {
        const auto it = done_at.find(op.inputs[0]);
        if (it != done_at.end() && it->second > now) {
          timeline.stall_seconds += it->second - now;
          now = it->second;
        }
        break;
      }
      default: {
        const double seconds = op.flops / compute_rate;
        now += seconds;
        timeline.compute_seconds += seconds;
      }
    }
  }
  if (copy_free > now) timeline.stall_seconds += copy_free - now;  // The step joins the copies.
  return timeline;
}

}  // namespace compiler
}  // namespace remat
