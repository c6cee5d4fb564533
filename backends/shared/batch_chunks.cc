// The calls of an op's batch chunks (batch_chunks.h).
#include "backends/shared/batch_chunks.h"

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

}  // namespace

bool splits_by_batch(const TensorRef& t) { return t.rank == 3; }

int64_t batch_of(const OpCall& call) {
  for (int o = 0; o < call.num_outputs; ++o) {
    if (splits_by_batch(*call.outputs[o])) return call.outputs[o]->dims[0];
  }
  return call.inputs[0]->dims[0];
}

OpCall batch_chunk_call(const OpCall& call, int64_t first, int64_t count, OpCallLists& lists,
                        TensorRef* refs) {
  OpCall part = lists.adopt(call);
  const int64_t batch = batch_of(call);
  for (int i = 0; i < call.num_inputs; ++i) {
    if (!splits_by_batch(*call.inputs[i])) continue;
    refs[i] = batch_chunk_ref(*call.inputs[i], batch, first, count);
    lists.in[i] = &refs[i];
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (!splits_by_batch(*call.outputs[o])) continue;
    refs[kMaxOpInputs + o] = batch_chunk_ref(*call.outputs[o], batch, first, count);
    lists.out[o] = &refs[kMaxOpInputs + o];
  }
  return part;
}

}  // namespace remat
