// C ABI of the eval program: a forward pass without dropout or updates, and its outputs.
#include "runtime/session.h"

using remat::set_error;

#define FAIL(session, status, ...) set_error(&(session)->err, (status), __VA_ARGS__)

extern "C" {

remat_status remat_session_eval(remat_session* s, float* out_loss) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const auto* plan = s->plan->root;
  if (plan->eval_ops() == 0) {
    return FAIL(s, REMAT_ERROR_NOT_FOUND,
                "eval: the plan has no eval program (compiled with --eval-program off, or "
                "plan format version %u)",
                static_cast<unsigned>(plan->format_version()));
  }
  remat_status status = remat::check_ready_to_run(s, "eval");
  if (status != REMAT_OK) return status;
  s->outputs_ready = false;
  // Outside begin_step/end_step: a backend that records the step (CUDA) runs these eagerly.
  const remat::StepContext ctx{plan->seed(), s->step};
  s->err.failed_op = 0;
  for (uint32_t i = remat::step_op_count(s->plan); i < plan->ops()->size() && status == REMAT_OK;
       ++i) {
    status = s->backend->run_op(s->ops[i], ctx, &s->err);
  }
  if (status != REMAT_OK) {
    s->backend->sync(&s->err);  // drain what was queued; the first error's message is kept
    return status;
  }
  status = s->backend->sync(&s->err);
  if (status == REMAT_OK && out_loss != nullptr) {
    const remat::TensorRef& loss = s->tensors[plan->eval_loss()];
    status = s->backend->download(loss.region, loss.offset, out_loss, sizeof(float), &s->err);
  }
  s->outputs_ready = status == REMAT_OK;
  return status;
}

remat_status remat_session_read_output(remat_session* s, const char* name, void* out_data,
                                       size_t bytes) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (name == nullptr || out_data == nullptr) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "read_output: %s is NULL",
                name ? "out_data" : "name");
  }
  uint32_t t = 0;
  if (!remat::find_named(s->plan, s->plan->root->outputs(), name, &t)) {
    return FAIL(s, REMAT_ERROR_NOT_FOUND, "read_output: the plan has no output '%s'", name);
  }
  const remat::TensorRef& ref = s->tensors[t];
  if (bytes != ref.bytes) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "read_output '%s': buffer of %zu bytes, the output has %llu", name, bytes,
                static_cast<unsigned long long>(ref.bytes));
  }
  if (!s->outputs_ready) {
    return FAIL(
        s, REMAT_ERROR_FAILED_PRECONDITION,
        "read_output '%s': no eval has run since the session was created or since the last step",
        name);
  }
  return s->backend->download(ref.region, ref.offset, out_data, bytes, &s->err);
}

}  // extern "C"
