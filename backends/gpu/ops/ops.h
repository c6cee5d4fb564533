// The host side of every op on the GPU backends (OpenCL and CUDA), written once: which kernels
// of backends/gpu/kernels an op launches, with which arguments, over how many work items; and
// the dispatch table both backends resolve ops through, built from the op catalogue.
#ifndef REMAT_BACKENDS_GPU_OPS_OPS_H_
#define REMAT_BACKENDS_GPU_OPS_OPS_H_

#include "backends/gpu/launcher.h"
#include "backends/shared/op_table.h"
#include "runtime/backend.h"

namespace remat {
namespace gpu {

/// One op's host side: enqueues its work through |l| and returns without waiting (except
/// where the launcher reads a report, see Launcher::end_check).
using Op = remat_status (*)(Launcher& l, const OpCall& call, const StepContext& ctx,
                            ErrorBuffer* err);

/// The dispatch table of both GPU backends: every op of the catalogue, by its snake name.
/// A backend's supports_op() is "the table has the op", its run_op() calls the entry.
const OpTable<Op>& op_table();

/// Launches set_step: the device state takes |ctx|'s seed and step. A backend calls it before
/// the first op of a step whose context differs from the last one it set.
remat_status set_step(Launcher& l, const StepContext& ctx, ErrorBuffer* err);

/// Launches init_draw: fills persistent tensor |t| by rule |d| (Backend::draw_init).
remat_status draw_init(Launcher& l, const TensorRef& t, const InitDraw& d, ErrorBuffer* err);

/// Ends an op that checked the i32 tensor |values| (ids, labels): launches report_value, which
/// adds the bad value to the op's report, then Launcher::end_check.
remat_status finish_check(Launcher& l, const OpCall& call, const TensorRef& values,
                          ErrorBuffer* err);

/// Formats the report of bad data |s| (s.error != 0) into |err| as the CPU kernels word it and
/// sets err->failed_op: "op N (name): id|label V at position P outside [0, L)", returning
/// REMAT_ERROR_OUT_OF_RANGE, or for finite_check "element P is V (op N, finite_check)",
/// returning REMAT_ERROR_NONFINITE.
remat_status report_error(const GpuState& s, ErrorBuffer* err);

/// Launches bias_add's kernel: y = x + b with |b| repeated over x's leading dims; |y| may be
/// |x| (in place, matmul's optional bias after the backend's product, with bias_add's bits).
/// |call| names the op in errors, |err| takes them.
remat_status add_bias(Launcher& l, const OpCall& call, const TensorRef& x, const TensorRef& b,
                      const TensorRef& y, ErrorBuffer* err);

// The ops, one per catalogue entry (ops/*.cc); the table holds them.
#define REMAT_GPU_OP_DECLARE(Name, snake, ...) \
  remat_status snake(Launcher& l, const OpCall& call, const StepContext& ctx, ErrorBuffer* err);
REMAT_OP_CATALOGUE(REMAT_GPU_OP_DECLARE)
#undef REMAT_GPU_OP_DECLARE

}  // namespace gpu
}  // namespace remat

#endif  // REMAT_BACKENDS_GPU_OPS_OPS_H_
