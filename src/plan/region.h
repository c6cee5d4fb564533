// Memory regions of a plan: where a tensor's bytes live. Plan vocabulary, shared by the
// compiler (which places tensors), the runtime (which verifies and binds regions) and backends.
#ifndef REMAT_PLAN_REGION_H_
#define REMAT_PLAN_REGION_H_

#include <stdint.h>

namespace remat {

/// A plan's memory regions; values equal remat.fb.Region in plan.fbs (checked where both are
/// seen, in runtime/plan_verify.cc) and are stored in plans.
enum class Region : uint8_t {
  kArena = 0,       ///< Activations, gradients, checkpoints, inputs: reused op by op.
  kPersistent = 1,  ///< Parameters, optimizer state, the loss: live all run.
  kHost = 2,        ///< Spill slots in host memory.
};

/// Number of regions.
constexpr int kRegionCount = 3;

}  // namespace remat

#endif  // REMAT_PLAN_REGION_H_
