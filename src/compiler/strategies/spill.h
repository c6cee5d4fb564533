// Spilling: when even the checkpoints do not fit the device, copy chosen checkpoints to host
// slots after they are produced and prefetch them back before the backward pass reads them,
// early enough that the copy hides behind compute (modelled from the backend's copy bandwidth
// and compute rate). All of it is decided here; the runtime only runs the copy ops.
#ifndef REMAT_COMPILER_STRATEGIES_SPILL_H_
#define REMAT_COMPILER_STRATEGIES_SPILL_H_

#include <stdint.h>

#include <vector>

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// How a spilled checkpoint's copy ops are placed, from the most hidden to the least memory.
enum class SpillPlacement {
  /// The forward wait goes where compute has covered the spill (if the forward pass is that
  /// long); the prefetch as early before its reader as compute covers the copy.
  kHidden,
  /// The forward wait right after the last forward reader (frees the bytes soonest); the
  /// prefetch early as above.
  kEarlyFree,
  /// Both as tight as possible: the prefetch right before its first reader.
  kTight,
};

/// What the spill schedule may use and how it models time.
struct SpillOptions {
  uint64_t device_budget = 0;  ///< Arena + persistent bytes that must fit (0: no spilling).
  // No defaults of its own: the compiler passes CompileOptions' (a backend's profile).
  double copy_bandwidth = 0;         ///< Host <-> device bytes per second.
  double compute_rate = 0;           ///< FLOPs per second of the device.
  bool asynchronous_copies = false;  ///< Copies overlap compute (device backends), or not (CPU).
  uint32_t alignment = 0;            ///< Region alignment.
};

/// What spilling did.
struct SpillReport {
  std::vector<int> spilled;   ///< Checkpoints copied to host (tensor indices).
  double copy_seconds = 0;    ///< Modelled time of every spill and prefetch copy.
  double hidden_seconds = 0;  ///< Of that, modelled time overlapped by compute
                              ///< (strategies/copy_timeline.h: copies queue on one stream).
};

/// Those of |checkpoints| that may spill (read after the forward pass, not empty), in the
/// order apply_spills() tries them: the least modelled copy time compute cannot hide per byte
/// freed first, then the larger.
std::vector<int> spill_order(const Graph& graph, size_t forward_ops,
                             const std::vector<int>& checkpoints, const SpillOptions& options);

/// A copy of |base| (forward ops first, |forward_ops| of them) with exactly |spilled| copied to
/// host after they are made and back before the backward pass reads them, every copy placed
/// by |placement|. The auto strategy and its tests price schedules with it. Throws
/// CompileError naming a tensor that the backward pass does not read after the forward pass.
Graph with_spilled(const Graph& base, size_t forward_ops, const std::vector<int>& spilled,
                   SpillPlacement placement, const SpillOptions& options);

/// Rewrites |graph| (forward ops first, |forward_ops| of them, then backward, recompute and
/// update ops) so that arena + persistent bytes fit |options.device_budget|, spilling those of
/// |checkpoints| whose copies the cost model hides best (per byte freed) first, each placed to
/// hide its copies where that still lowers the device bytes. Throws CompileError saying by how
/// much the step is over when spilling every checkpoint is not enough.
SpillReport apply_spills(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints,
                         const SpillOptions& options);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_STRATEGIES_SPILL_H_
