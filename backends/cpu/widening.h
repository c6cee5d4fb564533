// How the CPU backend runs an op whose tensors include 16-bit floats (REMAT_DTYPE_F16, BF16):
// by widening. Every distinct 16-bit tensor of the call (distinct by region and offset) gets a
// float32 slice of one workspace; inputs are converted into their slices, the float32 kernel
// runs on the slices, and each 16-bit output is rounded once from its slice back into its
// tensor. The matrix products are the exception (product_reads_16_bit): they read their 16-bit
// operands as they are and round a 16-bit output a strip at a time (a float32 operand is rounded
// into a 16-bit copy, a chunk of rows at a time where it is the batch). An output that is an input
// (an update in place) shares the input's slice, so it starts from the input's values; no other
// output is read before it is written (the kernels overwrite their outputs: op_catalogue.h), so no
// other output is converted in. Ops that move bytes of any dtype (the catalogue's kAnyDtype: spill,
// prefetch, wait) run as they are, and so do the data movement ops whose tensors share one dtype
// (permute, copy, select, concat, slice: moves_bytes). Two ways around the float32 copies give the
// same bits with less memory traffic: an op computed element by element (add, the activations:
// runs_per_element) goes through its tensors a chunk at a time on the stack, and reduce_leading,
// bias_add, embedding and its gradient, layer norm and its gradient read and write their 16-bit
// rows as they are, widening a row (or a chunk of one) at a time (reads_16_bit_input,
// writes_16_bit_output). One gives the same bits with less memory: fused attention, the
// convolutions, pooling and the softmax family, which compute each batch item alone, widen a chunk
// of items at a time (batch_chunk_items), so their slices stay near kWideningChunkBytes whatever
// the batch; so do a convolution's weight and bias gradients, sums over the batch, whose chunks'
// sums are added up in order (their bits are not the whole batch's).
//
// Which ops run widened and their slices are the rule the GPU backends share
// (backends/shared/widening_slices.h). The workspace is obtained once, at session creation
// (Backend::prepare): the most widening_bytes() of any op of the plan, nothing for a plan
// without 16-bit floats.
#ifndef REMAT_BACKENDS_CPU_WIDENING_H_
#define REMAT_BACKENDS_CPU_WIDENING_H_

#include <stdint.h>

#include "backends/cpu/kernels.h"
#include "backends/shared/widening_slices.h"

namespace remat {
namespace cpu {

/// Whether |call|, a 16-bit plan's matrix product (matmul, head_matmul), runs on its operands A
/// and B in 16 bits as they are instead of widened: its float32 inputs past B (a bias) and, in
/// matmul's reduce mode, its float32 output, which sums the batch, are what it needs. Operands of
/// another dtype than the product's (product_operand_dtype: a float32 weight) are first rounded
/// into a 16-bit slice of the workspace (product_slice_bytes). The kernel (ops/matmul.cc) runs
/// bfloat16 operands on bf16_gemm() where the CPU has AMX or AVX512-BF16 and the shape suits
/// it, others on the packed engine, which widens them while it packs them (gemm/half_panels.h);
/// a 16-bit output is summed in float32 in the thread's strip (uses_strips), the bias
/// added, and rounded once. Those sums run in their engine's order, not OpenBLAS's. An operand of
/// the batch's rows is rounded a chunk of rows at a time (product_chunk_rows).
bool product_reads_16_bit(const OpCall& call);

/// Whether |call| runs through the threads' float32 strips (KernelArgs::strips, parallel.h:
/// product_strip): a product_reads_16_bit() call with a 16-bit C, which it sums there a strip at
/// a time, and layer norm or its gradient with 16-bit rows it reads and writes there
/// (reads_16_bit_input). The backend obtains the strips when it is prepared for such a call.
bool uses_strips(const OpCall& call);

/// Rows a product_reads_16_bit() |call| rounds its operands of another dtype a chunk of at a
/// time: where its batch chunks (backends/shared/batch_chunks.h: matmul_rows, a matmul over the
/// rows of a rank-2 A) split such an operand (A, or B of a weight gradient's sum: a network's
/// float32 input in the first layer's product and weight gradient, the loss's float32 input
/// gradient in the last layer's), widening_chunk_items() of the float32 bytes of one row of
/// those operands, when fewer than the rows; 0 where it rounds them whole. Each chunk's rows of C
/// are the whole product's, bit for bit (the engines sum each element over K in an order that
/// depends on K alone); a sum over the rows (kSumOverRows) adds each chunk's product into C, its
/// bits the sum's chunk by chunk.
int64_t product_chunk_rows(const OpCall& call);

/// Bytes of workspace a product_reads_16_bit() |call| takes: a 16-bit copy of each operand of
/// another dtype than the product's (rounds_operand; one where A and B are the same tensor), 2
/// bytes an element rounded up to kWideningAlignment; of a chunk's rows of the split ones where
/// product_chunk_rows() is not 0.
uint64_t product_slice_bytes(const OpCall& call);

/// Whether matmul |call|, whose operands are bfloat16, runs on bf16_gemm(): the CPU has its
/// engines and bf16_gemm takes the shape (alpha only with beta 0, and the reduce mode sums its
/// batch with beta 1 but for one product over the stacked batch).
bool matmul_on_bf16_engine(const OpCall& call);

/// Inputs an op that runs_per_element() has at most.
constexpr int kMaxPerElementInputs = 2;

/// Elements of each tensor such an op widens and computes at a time: the float32 chunks of its
/// tensors (two inputs and an output, 12 KB) stay in L1 together.
constexpr int64_t kPerElementChunk = 1024;

/// Whether |call| computes each element of its one output from the same element of each input
/// alone (add, mul, scale, the activations and their gradients; not dropout, whose mask depends
/// on the index), every tensor of the output's count and none both input and output: then
/// run_widened() widens it a cache-sized chunk at a time instead of into the workspace, with
/// the same bits.
bool runs_per_element(const OpCall& call);

/// Whether |call|, fused attention (attention, attention_grad) in a 16-bit plan, sums its scores
/// q k^T (and in the gradient dcontext v^T) from bfloat16 operands as they are, by VDPBF16PS
/// (ops/attention_bf16.h), instead of in float32 from their widened copies: where both operands
/// of such a product are bfloat16 inputs (run_widened passes them in KernelArgs::bf16_in) and the
/// CPU has AVX512-BF16. Those sums are float32 in another order than the float32 kernel's, so
/// the bits differ from it in the last places; everything else of the op is the float32 kernel's.
bool attention_reads_bf16(const OpCall& call);

/// Batch items run_widened() widens |call| a chunk of at a time: for an op that
/// computes_per_batch_item() (fused attention, the convolutions and pooling that compute each
/// image alone, the softmax family, and their gradients), or that sums_over_batch_items() into
/// float32 outputs (a conv's weight and bias gradients), whose 16-bit tensors' float32 copies take
/// more than kWideningChunkBytes, widening_chunk_items() of one item's (the tensors plan/ops.h's
/// splits_by_batch() names are split along the batch; a mask, the filters are widened whole for
/// each chunk); 0 where it widens the call whole. A sum's chunks after the first write their sums
/// into the workspace, after the chunk's slices, and add them to the output's in order (the bits
/// are the float32 kernel's on each chunk, summed chunk by chunk).
int64_t batch_chunk_items(const OpCall& call);

/// Bytes of workspace run_widened() uses for |call|: widening_bytes(), but none for a call that
/// runs_per_element() (its chunks are on the threads' stacks), a chunk's for a call with
/// batch_chunk_items() (and a sum's float32 outputs, each rounded up to kWideningAlignment), none
/// for a tensor the kernel reads or writes as it is (reads_16_bit_input, writes_16_bit_output), and
/// for a product_reads_16_bit() call the 16-bit copies of its operands of another dtype only (2
/// bytes an element, rounded up to kWideningAlignment each). The backend's
/// workspace is the most of any op of the plan; `remat compile` states the same figure
/// (compiler/precision.h).
uint64_t cpu_widening_bytes(const OpCall& call);

/// Whether input |i| of |call| is a 16-bit tensor its float32 kernel reads as it is, widening as
/// it goes with the bits of the widened copy: reduce_leading's dy (a row at a time), bias_add's x,
/// dropout's and its gradient's input and embedding_grad's dy (a chunk at a time), batch norm's [N,
/// C, ...] tensors (plan/ops.h: reads_16_bit_as_it_is; a chunk of a row at a time), and layer
/// norm's x and its gradient's dy and x (a row at a time, where kNormRowSlots rows of the last dim
/// fit the thread's strip: plan/ops.h).
bool reads_16_bit_input(const OpCall& call, int i);

/// Whether output |o| of |call| is a 16-bit tensor its float32 kernel writes as it is, each row
/// rounded once from float32: bias_add's y, dropout's output, embedding's out, batch norm's y
/// and dx, and layer
/// norm's y and its gradient's dx where it reads its inputs so.
bool writes_16_bit_output(const OpCall& call, int o);

/// Runs |kernel| on |args| (the call's tensors resolved to host addresses) with its 16-bit
/// tensors widened into |workspace|: cpu_widening_bytes(*args.call) bytes aligned to
/// kWideningAlignment, owned by the caller. Conversions of large tensors are spread over
/// args.team. Returns the kernel's status; outputs are rounded back only when it is REMAT_OK.
remat_status run_widened(Kernel kernel, const KernelArgs& args, void* workspace);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_WIDENING_H_
