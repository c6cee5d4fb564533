// The calls of an op's batch chunks (batch_chunks.h).
#include "backends/shared/batch_chunks.h"

#include "backends/shared/op_args.h"
#include "plan/ops.h"

namespace remat {
namespace {

// |t| (split) as a chunk of |count| items from item |first| of its |batch| sees it.
TensorRef batch_chunk_ref(const TensorRef& t, int64_t batch, int64_t first, int64_t count) {
  TensorRef c = t;
  const uint64_t item_bytes = t.bytes / static_cast<uint64_t>(batch);
  c.offset += static_cast<uint64_t>(first) * item_bytes;
  c.dims[0] = count;
  c.numel = t.numel / batch * count;
  c.bytes = item_bytes * static_cast<uint64_t>(count);
  return c;
}

bool splits_input(const OpCall& call, int i) {
  const MatmulRows rows = matmul_rows(call);
  if (rows != MatmulRows::kWhole) return i == 0 || (i == 1 && rows == MatmulRows::kSumOverRows);
  return splits_by_batch(call.code, i, false, call.inputs[i]->rank);
}

bool splits_output(const OpCall& call, int o) {
  const MatmulRows rows = matmul_rows(call);
  if (rows != MatmulRows::kWhole) return rows == MatmulRows::kRowsOfAAndC;
  return splits_by_batch(call.code, o, true, call.outputs[o]->rank);
}

}  // namespace

MatmulRows matmul_rows(const OpCall& call) {
  if (call.code != static_cast<uint16_t>(OpCode::kMatMul)) return MatmulRows::kWhole;
  const TensorRef &a = *call.inputs[0], &b = *call.inputs[1], &c = *call.outputs[0];
  return remat::matmul_rows(a.rank, b.rank, c.rank, a.dims[0], b.dims[0], c.dims[0],
                            iattr(call, attr::matmul::trans_a) != 0,
                            iattr(call, attr::matmul::trans_b) != 0, c.dtype == REMAT_DTYPE_F32,
                            call.num_inputs > 2, same_tensor(a, b),
                            same_tensor(a, c) || same_tensor(b, c));
}

bool splits_by_batch(const OpCall& call, const TensorRef& t) {
  for (int i = 0; i < call.num_inputs; ++i) {
    if (same_tensor(*call.inputs[i], t) && splits_input(call, i)) return true;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (same_tensor(*call.outputs[o], t) && splits_output(call, o)) return true;
  }
  return false;
}

bool sums_into_float32(const OpCall& call) {
  if (!sums_over_batch_items(call.code)) return false;
  for (int o = 0; o < call.num_outputs; ++o) {
    if (call.outputs[o]->dtype != REMAT_DTYPE_F32) return false;
  }
  return true;
}

int64_t batch_of(const OpCall& call) {
  for (int o = 0; o < call.num_outputs; ++o) {
    if (splits_output(call, o)) return call.outputs[o]->dims[0];
  }
  for (int i = 0; i < call.num_inputs; ++i) {
    if (splits_input(call, i)) return call.inputs[i]->dims[0];
  }
  return call.inputs[0]->dims[0];
}

uint64_t batch_item_bytes(const OpCall& call, const WideningSlices& s) {
  const int64_t batch = batch_of(call);
  uint64_t bytes = 0;
  for (int k = 0; k < s.count; ++k) {
    const TensorRef& t = *s.tensor[k];
    if (splits_by_batch(call, t)) bytes += static_cast<uint64_t>(t.numel / batch) * sizeof(float);
  }
  return bytes;
}

OpCall batch_chunk_call(const OpCall& call, int64_t first, int64_t count, OpCallLists& lists,
                        TensorRef* refs) {
  OpCall part = lists.adopt(call);
  const int64_t batch = batch_of(call);
  for (int i = 0; i < call.num_inputs; ++i) {
    if (!splits_input(call, i)) continue;
    refs[i] = batch_chunk_ref(*call.inputs[i], batch, first, count);
    lists.in[i] = &refs[i];
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (!splits_output(call, o)) continue;
    refs[kMaxOpInputs + o] = batch_chunk_ref(*call.outputs[o], batch, first, count);
    lists.out[o] = &refs[kMaxOpInputs + o];
  }
  return part;
}

}  // namespace remat
