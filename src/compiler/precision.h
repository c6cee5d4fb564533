// The precision a plan stores its activations in: what `--precision` asks for, and the policy
// that gives every tensor of a graph its dtype.
#ifndef REMAT_COMPILER_PRECISION_H_
#define REMAT_COMPILER_PRECISION_H_

#include <string>

#include "backends/device_profile.h"
#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// How a plan stores its activations (docs/precision.md). Parameters, optimizer state,
/// parameter gradients, the loss and per-row statistics are float32 at every precision.
enum class Precision {
  kFp32 = 0,  ///< Every float tensor float32: the default.
  kBf16 = 1,  ///< Activations, checkpoints, spill slots and their gradients in bfloat16.
  kFp16 = 2,  ///< The same tensors in IEEE binary16.
};

/// "fp32", "bf16" or "fp16".
const char* precision_name(Precision precision);

/// Parses "fp32", "bf16" or "fp16"; returns false on anything else.
bool parse_precision(const std::string& text, Precision* out);

/// The dtype of the tensors |precision| stores in 16 bits (REMAT_DTYPE_F32 for kFp32).
remat_dtype activation_dtype(Precision precision);

/// Gives the forward activations of |graph| (forward ops only, before autodiff) the dtype of
/// |precision|: the first output of every forward op, when it is a float32 activation that the
/// loss does not read. Other outputs (layer and batch norm statistics, attention's log-sum-exp,
/// a loss's probabilities), the loss's inputs (so the eval program's predictions), inputs,
/// parameters and state keep their dtypes. Autodiff then gives each gradient its tensor's dtype.
void apply_precision(Graph& graph, Precision precision);

/// The bytes a backend allocates beside the arena to run |graph| (docs/precision.md): the most,
/// over the ops, of an op's widening copies (4 bytes an element of each distinct 16-bit tensor
/// the op reads or writes, each rounded up to 64 bytes: backends/shared/widening_slices.h, not
/// for ops that move bytes of any dtype: spill, prefetch, wait, nor for the data movement ops
/// whose tensors share one dtype: moves_bytes) and, on the GPUs, its scratch
/// (plan/gpu_scratch.h: fused attention's scores, the partial column sums of reduce_leading and
/// layer norm's gradient, in float32 plans too), as the backend's |rule|
/// (DeviceProfile::widening) counts them. kWhole: every op its whole 16-bit tensors. kGpu
/// (backends/gpu/ops/widening.h, ops.h's workspace_bytes): the ops of plan/ops.h's gpu_reads_16_bit
/// nothing, embedding_grad's dy nothing, fused attention, the convolutions, pooling and the
/// softmax family, a head_matmul by leading entry (plan/head_matmul_shape.h), a broadcast or
/// batched matmul over A and C of rank 3 or more, a reduce-mode one of rank-3 A and B into float32
/// C and the other sums over the batch into float32 (plan/ops.h: sums_over_batch_items) the tensors
/// plan/ops.h's splits_by_batch names for widening_chunk_items() of their batch at
/// kGpuWideningChunkBytes (the first and the last chunk, with their scratch), the rest whole;
/// kGpuHalfOperands also leaves out a matmul's 16-bit operands of its product's type. kCpu
/// (backends/cpu/widening.h, cpu_widening_bytes): the ops widened a chunk at a time on the stack
/// (the elementwise ops: plan/ops.h computes_per_element) nothing, fused attention, the
/// convolutions, pooling and the softmax family (computes_per_batch_item) and the sums over the
/// batch into float32 (sums_over_batch_items) their split tensors for widening_chunk_items() of
/// their batch (a sum's float32 outputs once more, for the later chunks' partial sums), the matrix
/// products only a 16-bit copy of an operand of another dtype, and reduce_leading's input,
/// bias_add's x and y, embedding's out, embedding_grad's dy and layer norm's rows (where
/// kNormRowSlots of them fit kWideningStripFloats) nothing. 0 on the CPU for a plan without 16-bit
/// tensors.
uint64_t workspace_bytes(const Graph& graph, WideningRule rule);

/// The workspace |op| of |graph| takes as a backend of |rule| counts it: its widening copies and,
/// on the GPUs, its scratch. workspace_bytes() is the most of it over the ops.
uint64_t op_workspace_bytes(const Graph& graph, const Op& op, WideningRule rule);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_PRECISION_H_
