// Dynamic loss scaling at run time (plan.fbs, LossScaling; docs/precision.md): the session keeps
// the scale S and its count of finite steps in two persistent state tensors, so that a saved
// training state carries them, and mirrors S into the alpha of the plan's scale ops (S) and
// unscale ops (1 / S). After each step it doubles S once growth_interval steps in a row had
// finite gradients, and halves it when a gradient's finite_check failed, as torch's GradScaler
// (growth factor 2, backoff 0.5).
#include <math.h>
#include <string.h>

#include "plan/op_attrs.h"
#include "plan/op_subset.h"
#include "runtime/session.h"

namespace remat {
namespace {

// Writes S and 1 / S into the alpha of the scale and unscale ops; the next step reads them.
void set_alphas(remat_session* s) {
  const fb::LossScaling* l = s->plan->root->loss_scaling();
  const struct {
    const flatbuffers::Vector<uint32_t>* ops;
    float alpha;
  } lists[] = {{l->scale_ops(), s->loss_scale}, {l->unscale_ops(), 1.0f / s->loss_scale}};
  for (const auto& list : lists) {
    for (uint32_t k = 0; k < list.ops->size(); ++k) {
      const OpCall& call = s->ops[list.ops->Get(k)];
      if (attr::scale::alpha.index < call.num_fattrs)
        s->fattrs[(call.fattrs - s->fattrs) + attr::scale::alpha.index] = list.alpha;
    }
  }
  s->backend->attributes_changed();
}

// Writes S and the finite-step count into their state tensors.
remat_status store(remat_session* s) {
  const fb::LossScaling* l = s->plan->root->loss_scaling();
  const TensorRef& scale = s->tensors[l->scale()];
  const TensorRef& clean = s->tensors[l->clean_steps()];
  remat_status status =
      s->backend->upload(scale.region, scale.offset, &s->loss_scale, sizeof(float), &s->err);
  if (status == REMAT_OK) {
    status = s->backend->upload(clean.region, clean.offset, &s->loss_scale_clean_steps,
                                sizeof(int64_t), &s->err);
  }
  return status;
}

}  // namespace

remat_status load_loss_scale(remat_session* s, bool zero_is_unset) {
  const fb::LossScaling* l = s->plan->root->loss_scaling();
  // A build without the scale op (a firmware build of a plan without loss scaling) leaves the
  // scale's code out: its verifier refuses a plan that scales its loss.
  if (l == nullptr || !op_in_build(OpCode::kScale)) return REMAT_OK;
  const TensorRef& scale = s->tensors[l->scale()];
  const TensorRef& clean = s->tensors[l->clean_steps()];
  float value = 0.0f;
  int64_t steps = 0;
  remat_status status =
      s->backend->download(scale.region, scale.offset, &value, sizeof(float), &s->err);
  if (status == REMAT_OK)
    status = s->backend->download(clean.region, clean.offset, &steps, sizeof(int64_t), &s->err);
  if (status != REMAT_OK) return status;
  // A persistent region the caller filled with parameters alone (init_params 0) holds no scale:
  // the caller cannot write these tensors, so they start at the plan's initial values.
  const auto* initial = s->plan->root->tensors()->Get(l->scale())->init_data();
  if (zero_is_unset && value == 0.0f && steps == 0 && initial != nullptr &&
      initial->size() == sizeof(float)) {
    memcpy(&value, initial->data(), sizeof(float));
    s->loss_scale = value;
    s->loss_scale_clean_steps = 0;
    status = store(s);
    if (status != REMAT_OK) return status;
  }
  // 1 / S must be exact: S a power of two from 2^-99 to 2^99 (1e-30 to 1e30).
  int exponent = 0;
  if (!(value >= 1e-30f) || !(value <= 1e30f) || frexpf(value, &exponent) != 0.5f || steps < 0) {
    return set_error(&s->err, REMAT_ERROR_INVALID_ARGUMENT,
                     "loss scale tensor '%s' holds %g and '%s' %lld: expected a power of two in "
                     "[1e-30, 1e30] and a count >= 0",
                     s->plan->root->tensors()->Get(l->scale())->name()->c_str(),
                     static_cast<double>(value),
                     s->plan->root->tensors()->Get(l->clean_steps())->name()->c_str(),
                     static_cast<long long>(steps));
  }
  s->loss_scale = value;
  s->loss_scale_clean_steps = steps;
  set_alphas(s);
  return REMAT_OK;
}

remat_status update_loss_scale(remat_session* s, bool gradients_overflowed) {
  const fb::LossScaling* l = s->plan->root->loss_scaling();
  if (l == nullptr || !op_in_build(OpCode::kScale)) return REMAT_OK;
  const float before = s->loss_scale;
  if (gradients_overflowed) {
    s->loss_scale_clean_steps = 0;
    if (s->loss_scale * 0.5f >= 1e-30f) s->loss_scale *= 0.5f;
  } else if (++s->loss_scale_clean_steps >= static_cast<int64_t>(l->growth_interval())) {
    s->loss_scale_clean_steps = 0;
    if (s->loss_scale * 2.0f <= 1e30f) s->loss_scale *= 2.0f;
  }
  if (s->loss_scale != before) set_alphas(s);
  return store(s);
}

}  // namespace remat
