// The GPU backends' widening of 16-bit float tensors (widening.h).
#include "backends/gpu/ops/widening.h"

#include "backends/shared/batch_chunks.h"
#include "backends/shared/widening_slices.h"
#include "backends/shared/op_args.h"
#include "plan/half_float.h"
#include "plan/head_matmul_shape.h"
#include "plan/matmul_shape.h"
#include "plan/ops.h"

namespace remat {
namespace gpu {
namespace {

// Launches |id| (widen_half, narrow_half or round_half) over |n| elements from |x| to |y|;
// |dtype| is the 16-bit type.
remat_status convert(Launcher& l, KernelId id, const TensorRef& x, const TensorRef& y,
                     uint8_t dtype, int64_t n, const OpCall& call, ErrorBuffer* err) {
  Args a(l, id);
  a.tensor(x).tensor(y).u64(n).i32(dtype == REMAT_DTYPE_F16 ? 1 : 0);
  return a.launch(static_cast<size_t>(n), call, err);
}

// Whether |call| runs in batch chunks (backends/shared/batch_chunks.h) when it widens: fused
// attention, the spatial ops and the softmax family, which compute each item alone (plan/ops.h:
// computes_per_batch_item); a conv's weight or bias gradient into float32; a head_matmul whose
// tensors' leading entries each hold one outer entry's heads; and a product whose A is [B, ...]
// of rank 3 or more: broadcast, C [B, ...] (each entry its own product with the rank-2 B),
// batched, B and C [B, ...] of A's rank, or reduce mode, B [B, ...] of A's rank into a float32
// rank-2 C without a bias (a weight gradient), each chunk's sum added into C (ops.h: op_part);
// and a product over the rows of a rank-2 A (backends/shared/batch_chunks.h: matmul_rows), its
// rows the batch: a linear layer's, its input's gradient, its weight's (a sum).
bool computes_by_batch_item(const OpCall& call) {
  if (computes_per_batch_item(call.code) || sums_into_float32(call)) return true;
  if (matmul_rows(call) != MatmulRows::kWhole) return true;
  if (call.code != static_cast<uint16_t>(OpCode::kHeadMatMul) &&
      call.code != static_cast<uint16_t>(OpCode::kMatMul))
    return false;
  const TensorRef &a = *call.inputs[0], &b = *call.inputs[1], &c = *call.outputs[0];
  if (call.code == static_cast<uint16_t>(OpCode::kHeadMatMul)) {
    return !same_tensor(a, c) && !same_tensor(b, c) &&
           head_matmul_by_leading_entry(head_matmul_shape(call), a.rank, b.rank, c.rank, a.dims[0],
                                        b.dims[0], c.dims[0]);
  }
  if (same_tensor(a, c) || same_tensor(b, c) || a.rank < 3) return false;
  const MatmulShape shape = matmul_shape(a.dims, a.rank, a.numel, b.dims, b.rank, b.numel, c.dims,
                                         c.rank, c.numel, false, false);
  if (shape.mode == MatmulMode::kBroadcast)
    return c.rank == a.rank && b.rank == 2 && a.dims[0] == c.dims[0];
  if (shape.mode == MatmulMode::kBatched)
    return b.rank == a.rank && c.rank == a.rank && a.dims[0] == b.dims[0] && a.dims[0] == c.dims[0];
  return shape.mode == MatmulMode::kReduce && b.rank == a.rank && a.dims[0] == b.dims[0] &&
         c.rank == 2 && c.dtype == REMAT_DTYPE_F32 && call.num_inputs == 2;
}

// The tensors of |call| that get no slice on |l|, as widening_slices() takes them (input i bit i,
// output o bit kMaxOpInputs + o): the 16-bit ones plan/ops.h's reads_16_bit_as_it_is names
// (embedding_grad's dy and batch norm's [N, C, ...] tensors reach here: their kernels' typed
// arguments), a product's 16-bit operands of the product's type where |l| reads them as they
// are (Launcher::takes_half_operands).
uint32_t read_as_they_are(const Launcher& l, const OpCall& call) {
  uint32_t rows = 0;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (reads_16_bit_as_it_is(call.code, i, false) && is_half_float(call.inputs[i]->dtype))
      rows |= 1u << i;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (reads_16_bit_as_it_is(call.code, o, true) && is_half_float(call.outputs[o]->dtype))
      rows |= 1u << (kMaxOpInputs + o);
  }
  if (rows != 0) return rows;
  if (product_operand_dtype(call) == REMAT_DTYPE_F32 || !l.takes_half_operands(call)) return 0;
  uint32_t mask = 0;
  for (int i = 0; i < 2; ++i) {
    if (is_half_float(call.inputs[i]->dtype) && !rounds_operand(call, i)) mask |= 1u << i;
  }
  return mask;
}

// Runs |op| on |call| with its 16-bit tensors widened whole; |part| says where |call| sits in
// the op's batch when it is a chunk of it (whole 0: it is the op's whole call).
remat_status widen_and_run(Launcher& l, Op op, const OpCall& call, const StepContext& ctx,
                           BatchPart part, uint64_t workspace_bytes, ErrorBuffer* err) {
  const uint32_t as_is = read_as_they_are(l, call);
  const WideningSlices s = widening_slices(call, as_is);
  // The op's scratch takes the workspace's end: it must not reach into the slices.
  const uint64_t scratch = scratch_bytes(call);
  if (s.bytes + scratch > workspace_bytes) {
    return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                     "op %u (%s): widening its 16-bit tensors needs %llu bytes of workspace "
                     "(and %llu of scratch), prepare() gave %llu",
                     static_cast<unsigned>(call.index), op_name(call.code),
                     static_cast<unsigned long long>(s.bytes),
                     static_cast<unsigned long long>(scratch),
                     static_cast<unsigned long long>(workspace_bytes));
  }
  // The slices as float32 tensors, and the call the op sees over them.
  TensorRef slices[kMaxWidenedTensors];
  for (int k = 0; k < s.count; ++k) {
    slices[k] = widened_ref(*s.tensor[k]);
    slices[k].region = kWorkspaceRegion;
    slices[k].offset = s.offset[k];
  }
  OpCallLists lists;
  OpCall wide = lists.adopt(call);
  bool converted[kMaxWidenedTensors] = {};
  const uint8_t product = product_operand_dtype(call);
  const bool half_operands = product != REMAT_DTYPE_F32 && l.takes_half_operands(call);
  TensorRef narrowed[2];  // A and B narrowed into their slices, for a 16-bit product.
  for (int i = 0; i < call.num_inputs; ++i) {
    const TensorRef& t = *call.inputs[i];
    const bool rounded = rounds_operand(call, i);
    if ((as_is >> i) & 1u) continue;  // read as it is
    if (half_operands && i < 2) {
      // An operand of another type (float32) narrowed into the first half of its slice.
      narrowed[i] = slices[s.find(t)];
      narrowed[i].dtype = product;
      narrowed[i].bytes = static_cast<uint64_t>(t.numel) * 2;
      lists.in[i] = &narrowed[i];
      const remat_status status =
          convert(l, kKernel_narrow_half, t, narrowed[i], product, t.numel, call, err);
      if (status != REMAT_OK) return status;
      continue;
    }
    if (!is_half_float(t.dtype) && !rounded) continue;
    const int k = s.find(t);
    lists.in[i] = &slices[k];
    if (converted[k]) continue;
    remat_status status = REMAT_OK;
    if (is_half_float(t.dtype))
      status = convert(l, kKernel_widen_half, t, slices[k], t.dtype, t.numel, call, err);
    // A product's operand of another type takes the product's 16 bits (widening_slices.h).
    if (status == REMAT_OK && rounded) {
      const TensorRef& from = is_half_float(t.dtype) ? slices[k] : t;
      status = convert(l, kKernel_round_half, from, slices[k], product, t.numel, call, err);
    }
    if (status != REMAT_OK) return status;
    converted[k] = true;
  }
  // An output written as it is keeps its tensor; the others are written into their slices.
  auto written_as_is = [&](int o) { return ((as_is >> (kMaxOpInputs + o)) & 1u) != 0; };
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (is_half_float(t.dtype) && !written_as_is(o)) lists.out[o] = &slices[s.find(t)];
  }
  // A chunk of fused attention draws dropout by an item's index in the op's whole batch, a sum's
  // chunks after the first add their sums into its output (ops.h: op_part).
  const OpPart in_part = part.whole > 0 ? op_part(call.code) : nullptr;
  const remat_status status =
      in_part != nullptr ? in_part(l, wide, ctx, part, err) : op(l, wide, ctx, err);
  if (status != REMAT_OK) return status;
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (!is_half_float(t.dtype) || written_as_is(o)) continue;
    const remat_status narrowed =
        convert(l, kKernel_narrow_half, *wide.outputs[o], t, t.dtype, t.numel, call, err);
    if (narrowed != REMAT_OK) return narrowed;
  }
  return REMAT_OK;
}

}  // namespace

bool widens(const OpCall& call) { return runs_widened(call) && !gpu_reads_16_bit(call.code); }

int64_t gpu_batch_chunk_items(const Launcher& l, const OpCall& call) {
  if (!widens(call) || !computes_by_batch_item(call)) return 0;
  const WideningSlices s = widening_slices(call, read_as_they_are(l, call));
  const int64_t batch = batch_of(call);
  const int64_t items =
      widening_chunk_items(batch_item_bytes(call, s), batch, kGpuWideningChunkBytes);
  return items < batch ? items : 0;
}

uint64_t workspace_bytes(const Launcher& l, const OpCall& call) {
  if (!widens(call)) return scratch_bytes(call);
  const int64_t items = gpu_batch_chunk_items(l, call);
  if (items == 0)
    return widening_slices(call, read_as_they_are(l, call)).bytes + scratch_bytes(call);
  // Each chunk runs with its own slices and scratch: the first has the most slices, the last may
  // hold more of attention's scores (fewer items may chunk them by heads: plan/gpu_scratch.h).
  const int64_t batch = batch_of(call);
  uint64_t most = 0;
  const int64_t firsts[2] = {0, (batch - 1) / items * items};
  for (const int64_t first : firsts) {
    const int64_t count = batch - first < items ? batch - first : items;
    OpCallLists lists;
    TensorRef refs[kMaxOpInputs + kMaxOpOutputs];
    const OpCall part = batch_chunk_call(call, first, count, lists, refs);
    const uint64_t bytes =
        widening_slices(part, read_as_they_are(l, part)).bytes + scratch_bytes(part);
    most = bytes > most ? bytes : most;
  }
  return most;
}

remat_status run_widened(Launcher& l, Op op, const OpCall& call, const StepContext& ctx,
                         uint64_t workspace_bytes, ErrorBuffer* err) {
  const int64_t items = gpu_batch_chunk_items(l, call);
  if (items == 0) return widen_and_run(l, op, call, ctx, {0, 0}, workspace_bytes, err);
  const int64_t batch = batch_of(call);
  return for_each_batch_chunk(call, items, [&](const OpCall& part, int64_t first) {
    return widen_and_run(l, op, part, ctx, {first, batch}, workspace_bytes, err);
  });
}

}  // namespace gpu
}  // namespace remat
