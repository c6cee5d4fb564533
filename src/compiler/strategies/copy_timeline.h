// The spill cost model: a step's ops on two queues, compute and copy, timed from FLOPs and bytes.
//
//   compute: op op op [spill issued] op op ... wait(x) stalls until x's copy is done ... op
//   copy:              `-> copy x (bytes / bandwidth), one after another in issue order
//
// A spill or prefetch starts when the compute queue reaches it and the copy queue is free; a
// wait holds the compute queue until the copy of its tensor is done; the step ends when both
// queues are. This is how the CUDA and OpenCL backends run copies (one copy stream or queue).
// A backend with synchronous copies (the CPU's) runs each copy on the compute queue: all of its
// copy time is a stall.
#ifndef REMAT_COMPILER_STRATEGIES_COPY_TIMELINE_H_
#define REMAT_COMPILER_STRATEGIES_COPY_TIMELINE_H_

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Modelled times of one step of a graph with copies.
struct CopyTimeline {
  double compute_seconds = 0;  ///< Sum of every op's flops / compute rate.
  double copy_seconds = 0;     ///< Sum of every spill's and prefetch's bytes / copy bandwidth.
  double stall_seconds = 0;    ///< Time compute waits for copies (waits and the end of the step).
  /// Copy time that compute hides: copy_seconds - stall_seconds.
  double hidden_seconds() const { return copy_seconds - stall_seconds; }
};

/// Times the ops of |graph| in order with |copy_bandwidth| bytes per second on the copy queue
/// and |compute_rate| FLOPs per second on the compute queue (both positive); with
/// |asynchronous_copies| false, copies run on the compute queue instead.
CopyTimeline simulate_copies(const Graph& graph, double copy_bandwidth, double compute_rate,
                             bool asynchronous_copies);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_COPY_TIMELINE_H_
