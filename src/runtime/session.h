// The state behind a remat_session handle: resolved ops and tensors, regions, backend.
#ifndef REMAT_RUNTIME_SESSION_H_
#define REMAT_RUNTIME_SESSION_H_

#include "runtime/backend.h"
#include "runtime/plan.h"

/// Size of a session's last-error message buffer.
#define REMAT_SESSION_ERROR_CAPACITY 512

struct remat_session {
  const remat_plan* plan;
  remat::Backend* backend;
  remat::TensorRef* tensors;  ///< One per plan tensor.
  remat::OpCall* ops;         ///< One per plan op, pointing into |operands|, |fattrs| and the
                              ///< plan's int attributes (aligned in place: plans are 8-aligned).
  const remat::TensorRef** operands;  ///< Every op's input then output tensors, in op order.
  float* fattrs;  ///< Copies of every op's float attributes (learning rates, loss scales change).
  uint8_t* input_set;  ///< Per input then label binding: written at least once.
  void* owned[3];      ///< Regions this session allocated (arena, persistent, host).
  uint64_t step;       ///< Steps completed.
  bool partly_loaded;  ///< A load_state failed while copying in: no step until one succeeds.
  bool outputs_ready;  ///< An eval ran and no step since: the outputs hold its values.
  float loss_scale;    ///< Dynamic loss scaling's S (plan.fbs, LossScaling), or 0.
  int64_t loss_scale_clean_steps;  ///< Finite steps since S last changed.
  /// remat_session_options.communicator: a data-parallel plan's (its allreduce ops call it).
  const remat_communicator* communicator;
  char error[REMAT_SESSION_ERROR_CAPACITY];
  remat::ErrorBuffer err;  ///< Points at |error|.
};

namespace remat {

/// Writes the initial value of every persistent tensor that the plan says to initialise, large
/// host draws on up to |threads| threads (0: every hardware thread; the session's option).
remat_status initialise_persistent(remat_session* session, size_t threads);

/// Finds the tensor called |name| among |ids| (one of |plan|'s binding lists, may be null) and
/// writes its index to *|out_tensor|; false when none is called so.
bool find_named(const remat_plan* plan, const flatbuffers::Vector<uint32_t>* ids, const char* name,
                uint32_t* out_tensor);

/// Reads dynamic loss scaling's state tensors into |session| and the alpha of the plan's scale
/// ops (runtime/loss_scale.cc), after the persistent region was initialised or loaded. With
/// |zero_is_unset| (the first step of a session created without initial values), tensors that
/// hold zero start at the plan's initial scale. REMAT_OK for a plan without loss scaling;
/// REMAT_ERROR_INVALID_ARGUMENT for a scale that is not a power of two in [1e-30, 1e30] or a
/// negative count.
remat_status load_loss_scale(remat_session* session, bool zero_is_unset);

/// After a step: halves the loss scale when |gradients_overflowed| (a gradient's finite_check
/// failed), else counts the step and doubles the scale after the plan's growth interval; writes
/// the state tensors. REMAT_OK for a plan without loss scaling.
remat_status update_loss_scale(remat_session* session, bool gradients_overflowed);

/// Number of ops of the training step: the plan's ops before the eval program's.
uint32_t step_op_count(const remat_plan* plan);

/// What a step or an eval (|what|, for the message) needs: no partly loaded state, every input
/// and label set. Records the failure in the session's message.
remat_status check_ready_to_run(remat_session* session, const char* what);

}  // namespace remat

#endif  // REMAT_RUNTIME_SESSION_H_
