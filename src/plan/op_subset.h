// Which ops a build carries. A firmware build (meson -Dfirmware_plan=PLAN.h on a cross build)
// compiles with REMAT_OP_SUBSET_HEADER naming that plan header and REMAT_OP_SUBSET_CODES the
// header's <NAME>_OP_CODES, the op codes its plan uses (remat compile --emit-c): the CPU
// kernels and verifier rules of every other op are left out of their tables, and the linker
// drops them. A plan holding another op is refused naming it. Other builds carry every op.
// REMAT_OP_SUBSET_HALF_FLOATS, the header's <NAME>_HALF_FLOATS, says whether the plan has
// 16-bit float tensors: without them the CPU backend's widening is left out too, and a plan
// with one is refused (its profile's half_floats is false).
#ifndef REMAT_PLAN_OP_SUBSET_H_
#define REMAT_PLAN_OP_SUBSET_H_

#include <stdint.h>

#include "plan/ops.h"

#ifdef REMAT_OP_SUBSET_HEADER
// The plan header's op list alone, not its bytes.
#define REMAT_PLAN_OPS_ONLY 1
#include REMAT_OP_SUBSET_HEADER
#undef REMAT_PLAN_OPS_ONLY
#endif

namespace remat {

#ifdef REMAT_OP_SUBSET_HEADER
/// The op codes this build carries.
constexpr uint16_t kBuildOps[] = {REMAT_OP_SUBSET_CODES};

/// Whether this build carries op |code|.
constexpr bool op_in_build(uint16_t code) {
  for (uint16_t c : kBuildOps) {
    if (c == code) return true;
  }
  return false;
}
#else
/// Whether this build carries op |code|: every build but a firmware one carries them all.
constexpr bool op_in_build(uint16_t) { return true; }
#endif

/// Whether this build carries op |code|.
constexpr bool op_in_build(OpCode code) { return op_in_build(static_cast<uint16_t>(code)); }

/// Whether this build runs 16-bit float tensors (every build but a firmware one of a plan
/// without them).
#ifdef REMAT_OP_SUBSET_HALF_FLOATS
constexpr bool kBuildHalfFloats = REMAT_OP_SUBSET_HALF_FLOATS != 0;
#else
constexpr bool kBuildHalfFloats = true;
#endif

}  // namespace remat

#endif  // REMAT_PLAN_OP_SUBSET_H_
