// The verified plan behind a remat_plan handle, and the checks that make it safe to run.
#ifndef REMAT_RUNTIME_PLAN_H_
#define REMAT_RUNTIME_PLAN_H_

#include <stddef.h>
#include <stdint.h>

#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "runtime/backend.h"

struct remat_plan {
  const remat::fb::Plan* root;  ///< Points into the caller's bytes (zero-copy).
  const uint8_t* bytes;         ///< The caller's bytes.
  size_t size;                  ///< Their length.
};

namespace remat {

/// Bytes per element of |dtype| (0 for an unknown dtype).
uint32_t dtype_size(uint32_t dtype);

/// Runs every check of a plan: FlatBuffers verifier, version, tensors inside their regions,
/// op arity/dtypes/shapes, bindings, and no overlap of tensors live at the same op. On
/// success returns REMAT_OK and sets *|out_root|.
remat_status verify_plan(const uint8_t* bytes, size_t size, const fb::Plan** out_root,
                         ErrorBuffer* err);

/// Dataflow checks of a plan whose tensors, ops and bindings are verified: bindings unique and
/// complete, no tensor read before it is written (before the first op only input and label
/// bindings and persistent tensors with an init count as written, for the step's ops and again
/// for the eval program's), every spill or prefetch waited for before its tensor is touched, the
/// eval program writing only its arena tensors and loss, and its loss and outputs written by it.
/// Writes to |copy_end| (one entry per tensor) the op index until which a host slot is in use by
/// an asynchronous copy (-1: none), for the overlap check.
remat_status verify_dataflow(const fb::Plan* plan, int32_t* copy_end, ErrorBuffer* err);

/// Checks a plan's dynamic loss scaling (runtime/plan_verify_loss_scaling.cc), if it has one:
/// PLAN_CORRUPT naming the field that is wrong.
remat_status verify_loss_scaling(const fb::Plan* plan, ErrorBuffer* err);

/// Whether an op of the eval program may write tensor |x|: an arena tensor that holds nothing a
/// step or the caller reads (no input, label, parameter or optimizer state).
bool eval_may_write(const fb::Tensor* x);

/// Fills |out| with tensor |index| of |plan| (verified).
void tensor_ref(const fb::Plan* plan, uint32_t index, TensorRef* out);

}  // namespace remat

#endif  // REMAT_RUNTIME_PLAN_H_
