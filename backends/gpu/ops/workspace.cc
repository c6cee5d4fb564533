// The GPU backends' workspace as the ops use it (ops.h): widening slices from its start
// (widening.h, which also sizes the whole: workspace_bytes), an op's scratch at its end.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "backends/shared/widening_slices.h"
#include "plan/gpu_scratch.h"
#include "plan/ops.h"

namespace remat {
namespace gpu {

uint64_t scratch_bytes(const OpCall& call) {
  if (call.code == static_cast<uint16_t>(OpCode::kReduceLeading)) {
    const int64_t columns = call.outputs[0]->numel;
    return gpu_column_sums_scratch_bytes(columns > 0 ? call.inputs[0]->numel / columns : 0, columns,
                                         1);
  }
  if (call.code == static_cast<uint16_t>(OpCode::kLayerNormGrad))
    return gpu_column_sums_scratch_bytes(rows_of(*call.inputs[1]), last_dim(*call.inputs[1]), 2);
  const uint64_t columns = conv_scratch_bytes(call);
  if (columns > 0) return columns;
  return attention_scores_bytes(call);
}

int64_t reduce_leading_blocks(const OpCall& call) {
  const int64_t columns = call.outputs[0]->numel;
  return gpu_column_blocks(columns > 0 ? call.inputs[0]->numel / columns : 0);
}

remat_status scratch_base(Launcher& l, const OpCall& call, uint64_t* base, ErrorBuffer* err) {
  const uint64_t need = scratch_bytes(call), have = l.workspace_size();
  if (need > have) {
    return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                     "op %u (%s): its scratch needs %llu bytes of workspace, prepare() gave %llu",
                     static_cast<unsigned>(call.index), op_name(call.code),
                     static_cast<unsigned long long>(need), static_cast<unsigned long long>(have));
  }
  *base = have - need;
  return REMAT_OK;
}

TensorRef workspace_tensor(uint64_t offset, int64_t floats) {
  TensorRef t{};
  t.region = kWorkspaceRegion;
  t.offset = offset;
  t.dtype = REMAT_DTYPE_F32;
  t.rank = 1;
  t.dims[0] = floats;
  t.numel = floats;
  t.bytes = static_cast<uint64_t>(floats) * sizeof(float);
  return t;
}

}  // namespace gpu
}  // namespace remat
