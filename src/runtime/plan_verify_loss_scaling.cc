// The plan verifier's check of dynamic loss scaling (plan.fbs, LossScaling): its state tensors
// are persistent scalars of role State, its ops `scale` ops of the step, and the plan checks
// gradients (the non-finite guard finds the overflows that halve the scale).
#include "plan/op_subset.h"
#include "plan/ops.h"
#include "runtime/plan.h"

namespace remat {

remat_status verify_loss_scaling(const fb::Plan* plan, ErrorBuffer* err) {
  const fb::LossScaling* l = plan->loss_scaling();
  if (l == nullptr) return REMAT_OK;
  // A build without the scale op (a firmware build of a plan without loss scaling) carries no
  // loss scaling: the plan's scale ops are refused too; this names the table.
  if (!op_in_build(OpCode::kScale)) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "loss_scaling: not in this build (a firmware build carries only the ops of "
                     "its plan, and scale is not one)");
  }
  const uint32_t n = plan->tensors()->size();
  const struct {
    uint32_t tensor;
    const char* field;
    fb::DType dtype;
    const char* dtype_name;
    uint32_t bytes;
  } state[] = {{l->scale(), "scale", fb::DType::F32, "f32", 4},
               {l->clean_steps(), "clean_steps", fb::DType::I64, "i64", 8}};
  for (const auto& x : state) {
    const fb::Tensor* t = x.tensor < n ? plan->tensors()->Get(x.tensor) : nullptr;
    if (t == nullptr || t->region() != fb::Region::Persistent || t->role() != fb::Role::State ||
        t->dtype() != x.dtype || t->size() != x.bytes) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "loss_scaling.%s names tensor %u, which is not a persistent %s scalar of "
                       "role State",
                       x.field, static_cast<unsigned>(x.tensor), x.dtype_name);
    }
  }
  if (l->growth_interval() == 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "loss_scaling.growth_interval is 0; the scale grows after at least 1 step");
  }
  const uint32_t step_ops = plan->ops()->size() - plan->eval_ops();
  const struct {
    const flatbuffers::Vector<uint32_t>* ops;
    const char* field;
  } lists[] = {{l->scale_ops(), "scale_ops"}, {l->unscale_ops(), "unscale_ops"}};
  for (const auto& list : lists) {
    if (list.ops == nullptr || list.ops->size() == 0) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "loss_scaling.%s is empty", list.field);
    }
    for (uint32_t k = 0; k < list.ops->size(); ++k) {
      const uint32_t i = list.ops->Get(k);
      if (i >= step_ops || plan->ops()->Get(i)->code() != static_cast<uint16_t>(OpCode::kScale)) {
        return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                         "loss_scaling.%s[%u] is op %u, which is not a scale op of the step",
                         list.field, static_cast<unsigned>(k), static_cast<unsigned>(i));
      }
    }
  }
  for (uint32_t i = 0; i < step_ops; ++i) {
    if (plan->ops()->Get(i)->code() == static_cast<uint16_t>(OpCode::kFiniteCheck)) return REMAT_OK;
  }
  return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                   "the plan scales its loss but has no finite_check to find overflows");
}

}  // namespace remat
