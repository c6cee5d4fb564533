// The GPU backends' widening of 16-bit float tensors (widening.h).
#include "backends/gpu/ops/widening.h"

#include "backends/shared/widening_slices.h"
#include "plan/half_float.h"
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

}  // namespace

remat_status run_widened(Launcher& l, Op op, const OpCall& call, const StepContext& ctx,
                         uint64_t workspace_bytes, ErrorBuffer* err) {
  const WideningSlices s = widening_slices(call);
  if (s.bytes > workspace_bytes) {
    return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                     "op %u (%s): widening its 16-bit tensors needs %llu bytes of workspace, "
                     "prepare() gave %llu",
                     static_cast<unsigned>(call.index), op_name(call.code),
                     static_cast<unsigned long long>(s.bytes),
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
    if (half_operands && i < 2) {
      if (!rounded) continue;  // In the product's 16 bits already: read as it is.
      // A float32 operand narrowed into the first half of its slice.
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
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (is_half_float(t.dtype)) lists.out[o] = &slices[s.find(t)];
  }
  const remat_status status = op(l, wide, ctx, err);
  if (status != REMAT_OK) return status;
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (!is_half_float(t.dtype)) continue;
    const remat_status narrowed =
        convert(l, kKernel_narrow_half, *wide.outputs[o], t, t.dtype, t.numel, call, err);
    if (narrowed != REMAT_OK) return narrowed;
  }
  return REMAT_OK;
}

}  // namespace gpu
}  // namespace remat
