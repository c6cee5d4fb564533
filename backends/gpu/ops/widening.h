// How the GPU backends run an op whose tensors include 16-bit floats (REMAT_DTYPE_F16, BF16):
// by widening on the device, as the CPU backend does on the host (backends/cpu/widening.h).
// Each distinct 16-bit tensor of the call gets a float32 slice of the backend's workspace
// (backends/shared/widening_slices.h), addressed as region kWorkspaceRegion (launcher.h);
// kernel widen_half converts each 16-bit input into its slice, the op's float32 launches run on
// a copy of the call whose 16-bit tensors are their slices, and kernel narrow_half rounds each
// 16-bit output back once (kernels/half.cl: src/plan/half_float.cc's bits). An output that is
// an input shares its slice; no other output is converted in (the ops overwrite their outputs).
// A 16-bit product's float32 operand (backends/shared/widening_slices.h) is rounded to the
// product's type in its slice (kernel round_half), or, where the backend takes the product's
// operands in 16 bits (Launcher::takes_half_operands: cuBLAS GemmEx), narrowed into it while
// the 16-bit operands are read as they are. Everything is queued in order on the backend's
// compute queue or stream, so it is captured into a CUDA graph like any launch.
#ifndef REMAT_BACKENDS_GPU_OPS_WIDENING_H_
#define REMAT_BACKENDS_GPU_OPS_WIDENING_H_

#include <stdint.h>

#include "backends/gpu/ops/ops.h"

namespace remat {
namespace gpu {

/// Runs |op| on |call| (for which runs_widened() holds) with its 16-bit tensors widened into
/// the backend's workspace of |workspace_bytes| bytes (Backend::prepare). Refuses
/// (REMAT_ERROR_FAILED_PRECONDITION, naming the op) a call that needs more than that; returns
/// |op|'s status, narrowing the outputs only when it is REMAT_OK.
remat_status run_widened(Launcher& l, Op op, const OpCall& call, const StepContext& ctx,
                         uint64_t workspace_bytes, ErrorBuffer* err);

}  // namespace gpu
}  // namespace remat

#endif  // REMAT_BACKENDS_GPU_OPS_WIDENING_H_
