// C ABI of plans: open (verify), close, sizes, bindings and what the plan says of itself.
#include <string.h>

#include <new>

#include "plan/ops.h"
#include "runtime/plan.h"
#include "runtime/port.h"

using remat::ErrorBuffer;
using remat::set_error;

extern "C" {

remat_status remat_plan_open(const void* bytes, size_t size, remat_plan** out_plan,
                             char* out_message, size_t message_capacity) {
  ErrorBuffer err{out_message, out_message ? message_capacity : 0};
  if (out_message != nullptr && message_capacity > 0) out_message[0] = '\0';
  if (out_plan == nullptr) return set_error(&err, REMAT_ERROR_INVALID_ARGUMENT, "out_plan is NULL");
  *out_plan = nullptr;
  const remat::fb::Plan* root = nullptr;
  const remat_status status =
      remat::verify_plan(static_cast<const uint8_t*>(bytes), size, &root, &err);
  if (status != REMAT_OK) return status;
  void* memory = remat::port_alloc(sizeof(remat_plan), alignof(remat_plan));
  if (memory == nullptr)
    return set_error(&err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the plan handle");
  *out_plan = new (memory) remat_plan{root, static_cast<const uint8_t*>(bytes), size};
  return REMAT_OK;
}

void remat_plan_close(remat_plan* plan) { remat::port_free(plan); }

remat_status remat_plan_memory(const remat_plan* plan, remat_plan_memory_info* out_info) {
  if (plan == nullptr || out_info == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  out_info->arena_bytes = plan->root->arena_size();
  out_info->persistent_bytes = plan->root->persistent_size();
  out_info->host_bytes = plan->root->host_size();
  out_info->alignment = plan->root->alignment();
  return REMAT_OK;
}

static const flatbuffers::Vector<uint32_t>* bindings(const remat_plan* plan,
                                                     remat_binding_kind kind) {
  switch (kind) {
    case REMAT_BINDING_INPUT: return plan->root->inputs();
    case REMAT_BINDING_LABEL: return plan->root->labels();
    case REMAT_BINDING_PARAM: return plan->root->params();
    case REMAT_BINDING_OUTPUT: return plan->root->outputs();
    case REMAT_BINDING_BUFFER: return plan->root->buffers();
  }
  return nullptr;
}

remat_status remat_plan_binding_count(const remat_plan* plan, remat_binding_kind kind,
                                      uint32_t* out_count) {
  if (plan == nullptr || out_count == nullptr || kind < REMAT_BINDING_INPUT ||
      kind > REMAT_BINDING_BUFFER) {
    return REMAT_ERROR_INVALID_ARGUMENT;
  }
  const auto* ids = bindings(plan, kind);
  *out_count = ids ? ids->size() : 0;
  return REMAT_OK;
}

remat_status remat_plan_binding(const remat_plan* plan, remat_binding_kind kind, uint32_t index,
                                remat_tensor_info* out_info) {
  if (plan == nullptr || out_info == nullptr || kind < REMAT_BINDING_INPUT ||
      kind > REMAT_BINDING_BUFFER) {
    return REMAT_ERROR_INVALID_ARGUMENT;
  }
  const auto* ids = bindings(plan, kind);
  if (ids == nullptr || index >= ids->size()) return REMAT_ERROR_NOT_FOUND;
  const remat::fb::Tensor* t = plan->root->tensors()->Get(ids->Get(index));
  out_info->name = t->name()->c_str();
  out_info->dtype = static_cast<remat_dtype>(t->dtype());
  out_info->rank = t->shape()->size();
  for (uint32_t d = 0; d < REMAT_MAX_RANK; ++d)
    out_info->dims[d] = d < out_info->rank ? t->shape()->Get(d) : 0;
  out_info->bytes = t->size();
  return REMAT_OK;
}

remat_status remat_plan_format_version(const remat_plan* plan, uint32_t* out_version) {
  if (plan == nullptr || out_version == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_version = plan->root->format_version();
  return REMAT_OK;
}

remat_status remat_plan_has_eval_program(const remat_plan* plan, int* out_has) {
  if (plan == nullptr || out_has == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_has = plan->root->eval_ops() > 0 ? 1 : 0;
  return REMAT_OK;
}

remat_status remat_plan_has_finite_checks(const remat_plan* plan, int* out_has) {
  if (plan == nullptr || out_has == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_has = 0;
  // The eval program's ops guard no step (verify_plan checked eval_ops <= the op count).
  const uint32_t step_ops = plan->root->ops()->size() - plan->root->eval_ops();
  for (uint32_t i = 0; i < step_ops; ++i) {
    if (plan->root->ops()->Get(i)->code() == static_cast<uint16_t>(remat::OpCode::kFiniteCheck)) {
      *out_has = 1;
      break;
    }
  }
  return REMAT_OK;
}

remat_status remat_plan_matmul_precision(const remat_plan* plan,
                                         remat_matmul_precision* out_precision) {
  if (plan == nullptr || out_precision == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  // verify_plan refused any value the schema does not name.
  *out_precision = static_cast<remat_matmul_precision>(plan->root->matmul_precision());
  return REMAT_OK;
}

remat_status remat_plan_seed(const remat_plan* plan, uint64_t* out_seed) {
  if (plan == nullptr || out_seed == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_seed = plan->root->seed();
  return REMAT_OK;
}

// A string of the plan's provenance, or NOT_FOUND with NULL when the plan has none.
static remat_status provenance_string(const flatbuffers::String* text, const char** out_text) {
  *out_text = text != nullptr ? text->c_str() : nullptr;
  return text != nullptr ? REMAT_OK : REMAT_ERROR_NOT_FOUND;
}

remat_status remat_plan_model(const remat_plan* plan, const char** out_model) {
  if (plan == nullptr || out_model == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const remat::fb::Provenance* provenance = plan->root->provenance();
  return provenance_string(provenance != nullptr ? provenance->model() : nullptr, out_model);
}

remat_status remat_plan_strategy(const remat_plan* plan, const char** out_strategy) {
  if (plan == nullptr || out_strategy == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const remat::fb::Provenance* provenance = plan->root->provenance();
  return provenance_string(provenance != nullptr ? provenance->strategy() : nullptr, out_strategy);
}

remat_status remat_plan_batch(const remat_plan* plan, uint32_t* out_batch) {
  if (plan == nullptr || out_batch == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const remat::fb::Provenance* provenance = plan->root->provenance();
  *out_batch = provenance != nullptr ? provenance->batch() : 0;
  return provenance != nullptr ? REMAT_OK : REMAT_ERROR_NOT_FOUND;
}

}  // extern "C"
