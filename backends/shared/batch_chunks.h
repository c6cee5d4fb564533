// An op that computes each batch item from that item's inputs alone, or sums what each item
// gives, run a chunk of its batch at a time: the call a chunk sees. A matmul over the rows of a
// rank-2 A (plan/matmul_shape.h: matmul_rows) is run so too, its rows the batch. The CPU backend
// (backends/cpu/widening.h) and the GPU backends (backends/gpu/ops/widening.h) widen such an op's
// 16-bit tensors a chunk at a time, so that their float32 copies take a bounded workspace whatever
// the batch. The tensors plan/ops.h's splits_by_batch() names are [B, ...] and are split; the
// others (a [Sq, Sk] mask, a weight, a bias, a sum over the batch) serve every item, or all of
// them, and are not.
#ifndef REMAT_BACKENDS_SHARED_BATCH_CHUNKS_H_
#define REMAT_BACKENDS_SHARED_BATCH_CHUNKS_H_

#include <stdint.h>

#include "backends/shared/widening_slices.h"
#include "plan/matmul_shape.h"
#include "runtime/backend.h"

namespace remat {

/// The MatmulRows (plan/matmul_shape.h: matmul_rows) of |call|: kWhole unless it is a matmul.
MatmulRows matmul_rows(const OpCall& call);

/// Whether |t|, an input or output of |call| (the same tensor: region and offset), is split by
/// its batch chunks: where matmul_rows(call) is not kWhole, A's rows and those of C (kRowsOfAAndC)
/// or of B (kSumOverRows); for any other call, plan/ops.h's splits_by_batch.
bool splits_by_batch(const OpCall& call, const TensorRef& t);

/// Whether |call| sums over its batch (plan/ops.h: sums_over_batch_items) into float32 outputs:
/// then the backends run it in batch chunks, each chunk's sums added into the outputs.
bool sums_into_float32(const OpCall& call);

/// The batch of a call run in batch chunks: the leading dim of its first split output, else of
/// its first split input.
int64_t batch_of(const OpCall& call);

/// Float32 bytes one batch item of the split tensors among |s|'s slices (of |call|) takes.
uint64_t batch_item_bytes(const OpCall& call, const WideningSlices& s);

/// The chunk of |call| of |count| items from item |first|: its split tensors' refs in |refs|
/// (inputs at their index, outputs at kMaxOpInputs + theirs), its lists in |lists|.
OpCall batch_chunk_call(const OpCall& call, int64_t first, int64_t count, OpCallLists& lists,
                        TensorRef* refs);

/// Calls body(part, first) for each chunk of |items| items of |call|'s batch in order (part the
/// chunk's call, first its first item), stopping at the first status other than REMAT_OK that
/// body returns, which it returns.
template <typename Body>
remat_status for_each_batch_chunk(const OpCall& call, int64_t items, Body body) {
  const int64_t batch = batch_of(call);
  for (int64_t first = 0; first < batch; first += items) {
    const int64_t count = batch - first < items ? batch - first : items;
    OpCallLists lists;
    TensorRef refs[kMaxOpInputs + kMaxOpOutputs];
    const OpCall part = batch_chunk_call(call, first, count, lists, refs);
    const remat_status status = body(part, first);
    if (status != REMAT_OK) return status;
  }
  return REMAT_OK;
}

}  // namespace remat

#endif  // REMAT_BACKENDS_SHARED_BATCH_CHUNKS_H_
