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

/// Bytes of workspace (kWorkspaceRegion) |call| needs on |l|: its widening slices (widening.h),
/// then its scratch_bytes; for a call widened in batch chunks (gpu_batch_chunk_items), the most
/// any chunk needs. A backend's prepare() allocates the most of any op of the plan
/// (widening.cc).
uint64_t workspace_bytes(const Launcher& l, const OpCall& call);

/// Bytes of scratch |call| holds at the end of the workspace while it runs, after any widening
/// slices: attention's scores (attention_scores_bytes), reduce_leading's partial column sums
/// (reduce_leading_blocks), layernorm_grad's partial column sums (layernorm_grad_blocks), a
/// convolution's column matrices (conv_scratch_bytes: a chunk of images'); 0 for the other ops.
uint64_t scratch_bytes(const OpCall& call);

/// For conv, conv_grad_input and conv_grad_weight of one group: their column matrices' scratch,
/// a chunk of images' (plan/gpu_scratch.h: gpu_conv_scratch_bytes); 0 for a grouped one (direct
/// kernels) and every other op.
uint64_t conv_scratch_bytes(const OpCall& call);

/// For attention and attention_grad: a chunk of heads' [Sq, Sk] float matrices (at most
/// kGpuAttentionScratchFloats floats, or one head's: plan/gpu_scratch.h); 0 for every other op.
uint64_t attention_scores_bytes(const OpCall& call);

/// Where a chunk of a call's batch (widening.h: run in batch chunks) sits in the whole batch:
/// its first item and the whole batch's items.
struct BatchPart {
  int64_t first;
  int64_t whole;
};

/// An op over |call|, the chunk |part| of its batch (widening.h: run in batch chunks), where
/// that is not the op table's entry over the chunk's call.
using OpPart = remat_status (*)(Launcher& l, const OpCall& call, const StepContext& ctx,
                                BatchPart part, ErrorBuffer* err);

/// The OpPart of |code|, or nullptr where the op table's entry runs a chunk as a call of its own:
/// attention and attention_grad draw dropout by each item's index in the whole batch
/// (attention_part, attention_grad_part); the sums over a batch (a reduce-mode matmul,
/// conv_grad_weight, channel_sum) write their output in the first chunk and add each later
/// chunk's sum to it (sum_part).
OpPart op_part(uint16_t code);

/// attention and attention_grad over |call|, the chunk |part| of an op's batch.
remat_status attention_part(Launcher& l, const OpCall& call, const StepContext& ctx, BatchPart part,
                            ErrorBuffer* err);
remat_status attention_grad_part(Launcher& l, const OpCall& call, const StepContext& ctx,
                                 BatchPart part, ErrorBuffer* err);

/// matmul, conv_grad_weight and channel_sum over |call|, the chunk |part| of an op's batch: a
/// sum over the batch (a reduce-mode matmul's C, dw, db) written by the first chunk, each later
/// chunk's sum added to it; a matmul of another mode as the op table's entry runs it.
remat_status sum_part(Launcher& l, const OpCall& call, const StepContext& ctx, BatchPart part,
                      ErrorBuffer* err);

/// For reduce_leading: the blocks (plan/gpu_scratch.h: gpu_column_blocks) of its dy viewed as
/// [rows, columns], each of which sums its columns into a partial row of the scratch
/// ([blocks, columns] floats).
int64_t reduce_leading_blocks(const OpCall& call);

/// For layernorm_grad: its blocks of rows (plan/gpu_scratch.h: gpu_column_blocks), each of which
/// sums dgamma's and dbeta's columns into a partial row of the scratch ([2, blocks, n] floats).
int64_t layernorm_grad_blocks(const OpCall& call);

/// Sets |base| to where |call|'s scratch starts in the workspace (its last scratch_bytes), or
/// refuses (REMAT_ERROR_FAILED_PRECONDITION, naming the op) a workspace prepare() did not size
/// for it.
remat_status scratch_base(Launcher& l, const OpCall& call, uint64_t* base, ErrorBuffer* err);

/// A float32 [floats] tensor at byte |offset| of the workspace.
TensorRef workspace_tensor(uint64_t offset, int64_t floats);

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
