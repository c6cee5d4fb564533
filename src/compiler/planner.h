// Memory planning: lifetimes -> offsets in the arena, persistent and host regions.
//
//   arena:      offset 0 .. arena_size, reused: a tensor's bytes belong to it only from the op
//               that first writes it to the op that last reads it (greedy by size, TFLM-style)
//   persistent: params, optimizer state and the loss, packed one after another, never reused
//   host:       spill slots, reused like the arena once a slot's prefetch has run
//
// The eval program's tensors are placed apart, in the same arena (they never live while a
// step's do), around the inputs and labels they share: the step's placement is the same with
// or without an eval program, and the arena is the larger of the two.
#ifndef REMAT_COMPILER_PLANNER_H_
#define REMAT_COMPILER_PLANNER_H_

#include <stdint.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Places buffers with known lifetimes in one region so that buffers live together never
/// share bytes.
class ArenaPlanner {
 public:
  /// |alignment|: every offset and size is rounded up to it.
  explicit ArenaPlanner(uint64_t alignment) : alignment_(alignment) {}
  /// Adds a buffer of |size| bytes live from op |first| to op |last| (inclusive); returns its id.
  int add_buffer(uint64_t size, int first, int last);
  /// Adds a buffer already placed at |offset| (another planner's, shared with this one's
  /// buffers); plan() places the others around it. Returns its id.
  int add_fixed_buffer(uint64_t offset, uint64_t size, int first, int last);
  /// Chooses every offset. Call once, after the last add_buffer().
  void plan();
  /// Offset of buffer |id| (after plan()).
  uint64_t offset(int id) const { return buffers_[id].offset; }
  /// Bytes the region needs (after plan()).
  uint64_t size() const { return size_; }
  /// The largest sum of aligned sizes live at one op: no placement can use fewer bytes.
  uint64_t lower_bound() const;
  /// Bytes live at each op index 0..max_op, for reports and timelines.
  std::vector<uint64_t> live_bytes_per_op(int max_op) const;

 private:
  struct Buffer {
    uint64_t size;
    int first;
    int last;
    uint64_t offset;
    bool fixed;
  };
  uint64_t alignment_;
  std::vector<Buffer> buffers_;
  uint64_t size_ = 0;
};

/// Where each tensor of a graph lives and for how long.
struct MemoryPlan {
  std::vector<uint8_t> region;   ///< remat::Region of each tensor.
  std::vector<uint64_t> offset;  ///< Byte offset in its region.
  std::vector<uint64_t> size;    ///< Aligned size in bytes.
  std::vector<int> first_use;    ///< First op writing it (-1: before the step).
  std::vector<int> last_use;     ///< Last op reading it (op count: after the step).
  uint64_t arena_size = 0;       ///< The larger of the next two.
  uint64_t step_arena_size = 0;  ///< What the step's tensors need.
  uint64_t eval_arena_size = 0;  ///< What the eval program's need (0: no eval program).
  uint64_t persistent_size = 0;
  uint64_t host_size = 0;
  uint64_t lower_bound = 0;  ///< Arena lower bound (ArenaPlanner::lower_bound()).
  uint32_t alignment = 0;    ///< As given to plan_memory().
};

/// The most bytes the tensors of one region may add up to (256 TiB): far above any device, and
/// low enough that no offset or size sum can overflow.
constexpr uint64_t kMaxRegionBytes = uint64_t{1} << 48;

/// Plans |graph|'s memory with |alignment| bytes (a power of two). Throws CompileError naming
/// the tensor and region when a region's tensors add up to more than kMaxRegionBytes.
MemoryPlan plan_memory(const Graph& graph, uint32_t alignment);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_PLANNER_H_
