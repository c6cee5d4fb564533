// How the GPU backends run an op whose tensors include 16-bit floats (REMAT_DTYPE_F16, BF16).
// The ops of plan/ops.h's gpu_reads_16_bit (the elementwise ops, bias_add, reduce_leading,
// dropout, layer norm and their gradients, embedding) run as they are: their kernels load and
// store each 16-bit element through kernels/half.cl's conversions, with the bits of the widened
// copy; so do embedding_grad's dy and batch norm's [N, C, ...] tensors (plan/ops.h:
// reads_16_bit_as_it_is), the per-channel ones widened where they are 16-bit. The data movement ops
// whose tensors share one dtype move their bytes (backends/shared/widening_slices.h: moves_bytes).
// Every other op is widened on the device, as the CPU backend does on the host
// (backends/cpu/widening.h). Each distinct 16-bit tensor of the call gets a float32 slice of the
// backend's workspace (backends/shared/widening_slices.h), addressed as region kWorkspaceRegion
// (launcher.h); kernel widen_half converts each 16-bit input into its slice, the op's float32
// launches run on a copy of the call whose 16-bit tensors are their slices, and kernel narrow_half
// rounds each 16-bit output back once (kernels/half.cl: src/plan/half_float.cc's bits). An output
// that is an input shares its slice; no other output is converted in (the ops overwrite their
// outputs). A 16-bit product's float32 operand (backends/shared/widening_slices.h) is rounded to
// the product's type in its slice (kernel round_half), or, where the backend takes the product's
// operands in 16 bits (Launcher::takes_half_operands: cuBLAS GemmEx), narrowed into it while
// the 16-bit operands are read as they are. Everything is queued in order on the backend's
// compute queue or stream, so it is captured into a CUDA graph like any launch. Fused attention,
// the convolutions, pooling and the softmax family, and products and sums over a batch
// (broadcast and batched products, head_matmul, a product over a rank-2 A's rows; a reduce-mode
// product or one A^T B over rank-2 rows, conv_grad_weight and channel_sum: weight and bias
// gradients) are widened a chunk of their batch at a time (gpu_batch_chunk_items), so their slices
// stay near kGpuWideningChunkBytes.
#ifndef REMAT_BACKENDS_GPU_OPS_WIDENING_H_
#define REMAT_BACKENDS_GPU_OPS_WIDENING_H_

#include <stdint.h>

#include "backends/gpu/ops/ops.h"

namespace remat {
namespace gpu {

/// Whether |call| runs widened here: runs_widened() holds of it and its kernels do not read its
/// 16-bit tensors as they are (gpu_reads_16_bit).
bool widens(const OpCall& call);

/// Batch items run_widened() widens |call| a chunk of at a time: for a call that widens() and
/// computes each batch item alone (plan/ops.h's computes_per_batch_item: fused attention, the
/// convolutions, pooling, the softmax family and their gradients; a head_matmul whose leading
/// entries each hold one outer entry's heads: plan/head_matmul_shape.h,
/// head_matmul_by_leading_entry; a matmul in broadcast or batched mode whose A and C are of rank 3
/// or more and one leading dim, or over the rows of a rank-2 A into those of C:
/// backends/shared/batch_chunks.h, matmul_rows) or sums over it into float32 (one in reduce mode of
/// rank-3 A and B, or A^T B over rank-2 rows, into a float32 C, conv_grad_weight, channel_sum: each
/// chunk's sum added into the output, ops.h's op_part) whose 16-bit tensors' float32 copies take
/// more than kGpuWideningChunkBytes
/// (plan/ops.h), widening_chunk_items() of one item's (the tensors plan/ops.h's splits_by_batch
/// names are split along the batch: backends/shared/batch_chunks.h; a weight, a bias or a rank-2
/// mask is widened whole for each chunk); 0 where it widens the call whole.
int64_t gpu_batch_chunk_items(const Launcher& l, const OpCall& call);

/// Runs |op| on |call| (for which widens() holds) with its 16-bit tensors widened into
/// the backend's workspace of |workspace_bytes| bytes (Backend::prepare: ops.h's
/// workspace_bytes). A product's 16-bit operands that |l| reads as they are
/// (Launcher::takes_half_operands) get no slices. Refuses (REMAT_ERROR_FAILED_PRECONDITION,
/// naming the op) a call (or a batch chunk) whose slices and scratch need more than that; returns
/// |op|'s status, narrowing the outputs only when it is REMAT_OK.
remat_status run_widened(Launcher& l, Op op, const OpCall& call, const StepContext& ctx,
                         uint64_t workspace_bytes, ErrorBuffer* err);

}  // namespace gpu
}  // namespace remat

#endif  // REMAT_BACKENDS_GPU_OPS_WIDENING_H_
