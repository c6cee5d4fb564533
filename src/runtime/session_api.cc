// C ABI of sessions: creation (the only place memory is obtained), inputs, params, steps.
// (The eval program's calls are in eval_api.cc, training states in state_api.cc.)
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <new>

#include "backends/device_profiles.h"
#include "plan/half_float.h"
#include "plan/op_attrs.h"
#include "plan/op_subset.h"
#include "plan/ops.h"
#include "runtime/backend_registry.h"
#include "runtime/communicator_fields.h"
#include "runtime/port.h"
#include "runtime/session.h"
#include "runtime/session_communicator.h"
#include "runtime/struct_size.h"

using remat::ErrorBuffer;
using remat::set_error;

// Ops read their int attributes in the plan (resolve_ops): FlatBuffers stores them little-endian.
static_assert(FLATBUFFERS_LITTLEENDIAN, "int attributes are read in place: a little-endian host");

namespace {

constexpr size_t kSessionAlignment = 64;

// remat_session_options of REMAT_API_VERSION 1 ends with init_params.
// remat.h's bound on remat_session_options.threads.
constexpr size_t kMaxThreads = 1024;
constexpr size_t kOptionsFirstSize = offsetof(remat_session_options, init_params) + sizeof(int);

// Records a failure in the session's message buffer.
#define FAIL(session, status, ...) set_error(&(session)->err, (status), __VA_ARGS__)

uint32_t binding_total(const remat_plan* plan) {
  return (plan->root->inputs() ? plan->root->inputs()->size() : 0) +
         (plan->root->labels() ? plan->root->labels()->size() : 0);
}

// Whether tensor |id| of |plan| is called |name|. (A loop over the name's length: GCC 12 takes
// strcmp on its c_str() for a read past a 1-byte object under -O1 with ASan, and a string_view
// compare pulls memcmp into firmware.)
bool tensor_named(const remat_plan* plan, uint32_t id, const char* name) {
  const flatbuffers::String* own = plan->root->tensors()->Get(id)->name();
  const char* chars = own->c_str();
  const uint32_t length = own->size();
  for (uint32_t i = 0; i < length; ++i) {
    if (chars[i] != name[i] || name[i] == '\0') return false;  // |name| differs or ends
  }
  return name[length] == '\0';
}

// Finds the binding |name| among inputs then labels; returns its slot or -1.
int64_t find_binding(const remat_plan* plan, const char* name, uint32_t* out_tensor) {
  int64_t slot = 0;
  for (const auto* ids : {plan->root->inputs(), plan->root->labels()}) {
    for (uint32_t i = 0; ids && i < ids->size(); ++i, ++slot) {
      if (tensor_named(plan, ids->Get(i), name)) {
        *out_tensor = ids->Get(i);
        return slot;
      }
    }
  }
  return -1;
}

// A parameter or a buffer: both are persistent state the caller may read and write by name.
bool find_param(const remat_plan* plan, const char* name, uint32_t* out_tensor) {
  return remat::find_named(plan, plan->root->params(), name, out_tensor) ||
         remat::find_named(plan, plan->root->buffers(), name, out_tensor);
}

// Uses the caller's region as it is, or allocates one and zeroes it; checks size and alignment.
// Zeroing costs one pass at creation and makes what a session owns deterministic: bytes no plan
// initialises (padding, persistent tensors with init_params = 0) read as zeros, never as what the
// allocator left there.
remat_status bind_region(remat_session* s, int index, const char* what, void* given,
                         size_t given_size, uint64_t needed, uint32_t alignment, void** out) {
  if (given == nullptr) {
    s->owned[index] = remat::port_alloc(needed, alignment);
    if (s->owned[index] == nullptr) {
      return FAIL(s, REMAT_ERROR_RESOURCE_EXHAUSTED,
                  "could not allocate the %s region of %llu bytes", what,
                  static_cast<unsigned long long>(needed));
    }
    memset(s->owned[index], 0, static_cast<size_t>(needed));
    *out = s->owned[index];
    return REMAT_OK;
  }
  if (given_size < needed) {
    return FAIL(s, REMAT_ERROR_ARENA_TOO_SMALL, "%s region is %zu bytes; the plan needs %llu", what,
                given_size, static_cast<unsigned long long>(needed));
  }
  if (reinterpret_cast<uintptr_t>(given) % alignment != 0) {
    return FAIL(s, REMAT_ERROR_MISALIGNED, "%s region at %p is not aligned to %u bytes", what,
                given, static_cast<unsigned>(alignment));
  }
  *out = given;
  return REMAT_OK;
}

// On a backend whose kernels take float32 only (its profile's half_floats), refuses op |index|
// when it computes on a 16-bit float tensor; copies between regions move any dtype.
remat_status check_half_floats(remat_session* s, const remat::fb::Op* op, uint32_t index) {
  const remat::OpInfo* info = remat::op_info(op->code());
  if (s->backend->profile().half_floats || info->dtypes == remat::OpDtypes::kAnyDtype) {
    return REMAT_OK;
  }
  for (const auto* ids : {op->inputs(), op->outputs()}) {
    for (uint32_t k = 0; ids && k < ids->size(); ++k) {
      const remat::fb::Tensor* t = s->plan->root->tensors()->Get(ids->Get(k));
      const uint8_t dtype = static_cast<uint8_t>(t->dtype());
      if (remat::is_half_float(dtype)) {
        return FAIL(s, REMAT_ERROR_UNIMPLEMENTED,
                    "op %u (%s): tensor '%s' is %s; backend '%s' runs float32 tensors only so far "
                    "(compile with --precision fp32)",
                    static_cast<unsigned>(index), info->name, t->name() ? t->name()->c_str() : "",
                    dtype == REMAT_DTYPE_BF16 ? "bf16" : "f16", s->backend->name());
      }
    }
  }
  return REMAT_OK;
}

#if REMAT_COMPACT_TABLES
// With compact tables (TensorBytes and TensorDim of 32 bits), refuses a plan with a tensor whose
// offset + size is past 2^31 - 1, before any region is allocated. That bounds the rest: the
// verifier gives every dim at least 1 and every tensor numel x (2 bytes or more) bytes, so its
// element count and dims are below 2^30, and the kernels' sums of two offsets or products of
// dims stay inside the 32-bit types.
remat_status check_fits_compact_tables(remat_session* s) {
  const auto* tensors = s->plan->root->tensors();
  for (uint32_t t = 0; t < tensors->size(); ++t) {
    const remat::fb::Tensor* tensor = tensors->Get(t);
    const uint64_t end = tensor->offset() + tensor->size();
    if (end > INT32_MAX) {
      return FAIL(s, REMAT_ERROR_RESOURCE_EXHAUSTED,
                  "tensor %u ('%s'): its offset + size (%llu bytes) is past 2^31 - 1, the most "
                  "this build's compact session tables hold (-Dcompact_tables)",
                  static_cast<unsigned>(t), tensor->name() ? tensor->name()->c_str() : "",
                  static_cast<unsigned long long>(end));
    }
  }
  return REMAT_OK;
}
#endif

// Resolves every op's tensors and attributes once, so a step only walks arrays, checks that the
// backend runs each op, then lets it obtain its working memory.
remat_status resolve_ops(remat_session* s) {
  const auto* plan = s->plan->root;
  const uint32_t n = plan->tensors()->size();
  for (uint32_t t = 0; t < n; ++t) remat::tensor_ref(plan, t, &s->tensors[t]);
  uint64_t operands_at = 0, f_at = 0;
  for (uint32_t i = 0; i < plan->ops()->size(); ++i) {
    const remat::fb::Op* op = plan->ops()->Get(i);
    remat::OpCall& call = s->ops[i];
    call.code = op->code();
    call.index = i;
    call.num_inputs = static_cast<uint8_t>(op->inputs() ? op->inputs()->size() : 0);
    call.num_outputs = static_cast<uint8_t>(op->outputs() ? op->outputs()->size() : 0);
    call.inputs = s->operands + operands_at;
    for (int k = 0; k < call.num_inputs; ++k)
      s->operands[operands_at++] = &s->tensors[op->inputs()->Get(k)];
    call.outputs = s->operands + operands_at;
    for (int k = 0; k < call.num_outputs; ++k)
      s->operands[operands_at++] = &s->tensors[op->outputs()->Get(k)];
    call.num_iattrs = op->iattrs() ? op->iattrs()->size() : 0;
    call.num_fattrs = op->fattrs() ? op->fattrs()->size() : 0;
    // In place: the verified plan is 8-aligned and its vectors are aligned within it; the
    // int64 elements are the host's (little-endian) bits, checked at the top of this file.
    call.iattrs = call.num_iattrs > 0 ? op->iattrs()->data() : nullptr;
    call.fattrs = s->fattrs + f_at;
    for (uint32_t k = 0; k < call.num_fattrs; ++k) s->fattrs[f_at++] = op->fattrs()->Get(k);
    if (!s->backend->supports_op(call.code)) {
      return FAIL(s, REMAT_ERROR_UNIMPLEMENTED, "op %u (%s): not implemented by the %s backend",
                  static_cast<unsigned>(i), remat::op_name(call.code), s->backend->name());
    }
    const remat_status half = check_half_floats(s, op, i);
    if (half != REMAT_OK) return half;
  }
  return s->backend->prepare(s->ops, plan->ops()->size(), &s->err);
}

// Rewrites the message of the failed finite_check of the step just run to name the tensor it
// checked, which the backend's kernels (whose words it keeps) do not know, and to say how many
// parameters the plan had updated before that check (none with atomic checks). The step is
// numbered from 1, as `remat train` counts steps done: s->step, now that it counts this one.
void name_nonfinite_tensor(remat_session* s) {
  char detail[REMAT_SESSION_ERROR_CAPACITY];
  memcpy(detail, s->error, sizeof(detail));
  const auto* ops = s->plan->root->ops();
  const uint32_t op = s->err.failed_op;
  const unsigned long long step = s->step;
  if (op == 0 || op > ops->size() || ops->Get(op - 1)->inputs() == nullptr ||
      ops->Get(op - 1)->inputs()->size() == 0) {
    FAIL(s, REMAT_ERROR_NONFINITE, "step %llu: %s", step, detail);
    return;
  }
  uint32_t updated = 0;
  for (uint32_t i = 0; i + 1 < op; ++i) updated += remat::is_optimizer_update(s->ops[i].code);
  const char* name =
      s->plan->root->tensors()->Get(ops->Get(op - 1)->inputs()->Get(0))->name()->c_str();
  if (updated == 0) {
    FAIL(s, REMAT_ERROR_NONFINITE,
         "step %llu: tensor '%s' is not finite: %s; no parameter was updated", step, name, detail);
  } else {
    FAIL(s, REMAT_ERROR_NONFINITE,
         "step %llu: tensor '%s' is not finite: %s; %u parameters had been updated before it, the "
         "others were not",
         step, name, detail, static_cast<unsigned>(updated));
  }
}

// Whether the step's failed finite_check (s->err.failed_op) checked a gradient, not the loss:
// with dynamic loss scaling, an overflow that halves the scale.
bool gradient_check_failed(const remat_session* s) {
  if (s->plan->root->loss_scaling() == nullptr) return false;
  const auto* ops = s->plan->root->ops();
  const uint32_t op = s->err.failed_op;
  if (op == 0 || op > ops->size() || ops->Get(op - 1)->inputs() == nullptr ||
      ops->Get(op - 1)->inputs()->size() == 0)
    return false;
  const uint32_t t = ops->Get(op - 1)->inputs()->Get(0);
  return s->plan->root->tensors()->Get(t)->role() == remat::fb::Role::Grad;
}

void copy_message(const remat_session* s, char* out, size_t capacity) {
  if (out != nullptr && capacity > 0) {
    strncpy(out, s->error, capacity - 1);
    out[capacity - 1] = '\0';
  }
}

}  // namespace

namespace remat {

bool find_named(const remat_plan* plan, const flatbuffers::Vector<uint32_t>* ids, const char* name,
                uint32_t* out_tensor) {
  for (uint32_t i = 0; ids && i < ids->size(); ++i) {
    if (tensor_named(plan, ids->Get(i), name)) {
      *out_tensor = ids->Get(i);
      return true;
    }
  }
  return false;
}

uint32_t step_op_count(const remat_plan* plan) {
  return plan->root->ops()->size() - plan->root->eval_ops();
}

remat_status check_ready_to_run(remat_session* s, const char* what) {
  if (s->partly_loaded) {
    return FAIL(s, REMAT_ERROR_FAILED_PRECONDITION,
                "%s: a load_state failed while copying the state in; load a state first", what);
  }
  const uint32_t bindings = binding_total(s->plan);
  for (uint32_t slot = 0; slot < bindings; ++slot) {
    if (!s->input_set[slot]) {
      const auto* inputs = s->plan->root->inputs();
      const uint32_t n_inputs = inputs ? inputs->size() : 0;
      const uint32_t t =
          slot < n_inputs ? inputs->Get(slot) : s->plan->root->labels()->Get(slot - n_inputs);
      return FAIL(s, REMAT_ERROR_FAILED_PRECONDITION,
                  "%s: %s '%s' has never been set (remat_session_set_input)", what,
                  slot < n_inputs ? "input" : "label",
                  s->plan->root->tensors()->Get(t)->name()->c_str());
    }
  }
  return REMAT_OK;
}

}  // namespace remat

extern "C" {

remat_status remat_session_options_init_sized(remat_session_options* options, size_t struct_size) {
  if (options == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const remat_status status = remat::check_struct_size("options", struct_size, kOptionsFirstSize,
                                                       sizeof(remat_session_options), nullptr);
  if (status != REMAT_OK) return status;
  // Defaults built in full here, then only the caller's prefix copied out: its struct may be
  // an older, smaller one.
  remat_session_options defaults;
  memset(&defaults, 0, sizeof(defaults));
  defaults.struct_size = struct_size;
  defaults.backend = "cpu";
  defaults.init_params = 1;
  memcpy(options, &defaults, struct_size);
  return REMAT_OK;
}

remat_status remat_session_create(const remat_plan* plan, const remat_session_options* options,
                                  remat_session** out_session, char* out_message,
                                  size_t message_capacity) {
  ErrorBuffer early{out_message, out_message ? message_capacity : 0};
  if (out_message != nullptr && message_capacity > 0) out_message[0] = '\0';
  if (out_session == nullptr)
    return set_error(&early, REMAT_ERROR_INVALID_ARGUMENT, "out_session is NULL");
  *out_session = nullptr;
  if (plan == nullptr) return set_error(&early, REMAT_ERROR_INVALID_ARGUMENT, "plan is NULL");
  // The caller's struct over the defaults: an older caller's smaller one keeps the defaults of
  // the fields it lacks (struct_size rules in remat.h).
  remat_session_options given;
  remat_session_options_init(&given);
  if (options != nullptr) {
    const remat_status size_status = remat::check_struct_size(
        "options", options->struct_size, kOptionsFirstSize, sizeof(remat_session_options), &early);
    if (size_status != REMAT_OK) return size_status;
    memcpy(&given, options, options->struct_size);
  }
  options = &given;
  void* memory = remat::port_alloc(sizeof(remat_session), kSessionAlignment);
  if (memory == nullptr)
    return set_error(&early, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for a session");
  remat_session* s = new (memory) remat_session();
  s->plan = plan;
  s->err = ErrorBuffer{s->error, sizeof(s->error)};
  const auto* root = plan->root;
  const uint32_t n_tensors = root->tensors()->size(), n_ops = root->ops()->size();
  uint64_t n_operands = 0, n_f = 0;
  for (uint32_t i = 0; i < n_ops; ++i) {
    const remat::fb::Op* op = root->ops()->Get(i);
    n_operands +=
        (op->inputs() ? op->inputs()->size() : 0) + (op->outputs() ? op->outputs()->size() : 0);
    n_f += op->fattrs() ? op->fattrs()->size() : 0;
  }
  s->tensors = static_cast<remat::TensorRef*>(
      remat::port_alloc(sizeof(remat::TensorRef) * (n_tensors + 1), 8));
  s->ops = static_cast<remat::OpCall*>(remat::port_alloc(sizeof(remat::OpCall) * (n_ops + 1), 8));
  s->operands = static_cast<const remat::TensorRef**>(
      remat::port_alloc(sizeof(remat::TensorRef*) * (n_operands + 1), 8));
  s->fattrs = static_cast<float*>(remat::port_alloc(sizeof(float) * (n_f + 1), 8));
  s->input_set = static_cast<uint8_t*>(remat::port_alloc(binding_total(plan) + 1, 8));
  remat_status status = REMAT_OK;
  if (!s->tensors || !s->ops || !s->operands || !s->fattrs || !s->input_set) {
    status =
        FAIL(s, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the tables of %u tensors and %u ops",
             static_cast<unsigned>(n_tensors), static_cast<unsigned>(n_ops));
  }
  if (status == REMAT_OK) memset(s->input_set, 0, binding_total(plan) + 1);
#if REMAT_COMPACT_TABLES
  if (status == REMAT_OK) status = check_fits_compact_tables(s);
#endif
  const char* backend = options->backend ? options->backend : "cpu";
  remat::RegionSetup regions{};
  regions.alignment = root->alignment();
  regions.arena_bytes = root->arena_size();
  regions.persistent_bytes = root->persistent_size();
  regions.host_bytes = root->host_size();
  regions.tf32_matmuls = root->matmul_precision() == remat::fb::MatmulPrecision::TF32;
  if (status == REMAT_OK && options->threads > kMaxThreads) {
    status = FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "options.threads is %zu; the most is %zu",
                  options->threads, kMaxThreads);
  }
  regions.threads = static_cast<uint32_t>(options->threads);
  if (status == REMAT_OK) status = remat::check_communicator(s, options->communicator, backend);
  // Only the all-reduce ops hand the communicator tensors (a build without them has none).
  regions.device_memory_sums = remat::op_in_build(remat::OpCode::kAllreduceStart) &&
                               s->communicator != nullptr &&
                               remat::communicator_memory(*s->communicator) == REMAT_MEMORY_CUDA;
  // Backends that run on host memory get the caller's (or the session's) regions; device
  // backends allocate their own. An unknown name is left to create_backend() to report.
  const remat::DeviceProfile* profile = remat::find_device_profile(backend);
  const bool host_regions = profile != nullptr && profile->binds_host_memory;
  if (status == REMAT_OK && host_regions) {
    status = bind_region(s, 0, "arena", options->arena, options->arena_size, root->arena_size(),
                         root->alignment(), &regions.arena);
    if (status == REMAT_OK) {
      status = bind_region(s, 1, "persistent", options->persistent, options->persistent_size,
                           root->persistent_size(), root->alignment(), &regions.persistent);
    }
  }
  if (status == REMAT_OK && (root->host_size() > 0 || options->host != nullptr)) {
    status = bind_region(s, 2, "host", options->host, options->host_size, root->host_size(),
                         root->alignment(), &regions.host);
  }
  if (status == REMAT_OK) status = remat::create_backend(backend, regions, &s->backend, &s->err);
  if (status == REMAT_OK) status = resolve_ops(s);
  if (status == REMAT_OK && options->init_params)
    status = remat::initialise_persistent(s, options->threads);
  // Without initial values the caller's persistent region (or a state loaded later) holds the
  // loss scale: it is read before the first step then.
  if (status == REMAT_OK && options->init_params)
    status = remat::load_loss_scale(s, /*zero_is_unset=*/false);
  if (status != REMAT_OK) {
    copy_message(s, out_message, message_capacity);
    remat_session_destroy(s);
    return status;
  }
  *out_session = s;
  return REMAT_OK;
}

void remat_session_destroy(remat_session* s) {
  if (s == nullptr) return;
  remat::destroy_backend(s->backend);
  for (void* region : s->owned) remat::port_free(region);
  remat::port_free(s->tensors);
  remat::port_free(s->ops);
  remat::port_free(s->operands);
  remat::port_free(s->fattrs);
  remat::port_free(s->input_set);
  s->~remat_session();
  remat::port_free(s);
}

remat_status remat_session_set_input(remat_session* s, const char* name, const void* data,
                                     size_t bytes) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (name == nullptr || data == nullptr) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "set_input: %s is NULL", name ? "data" : "name");
  }
  uint32_t t = 0;
  const int64_t slot = find_binding(s->plan, name, &t);
  if (slot < 0)
    return FAIL(s, REMAT_ERROR_NOT_FOUND, "set_input: the plan has no input or label '%s'", name);
  const remat::TensorRef& ref = s->tensors[t];
  if (bytes != ref.bytes) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "set_input '%s': %zu bytes given, the binding has %llu", name, bytes,
                static_cast<unsigned long long>(ref.bytes));
  }
  const remat_status status = s->backend->upload(ref.region, ref.offset, data, bytes, &s->err);
  if (status == REMAT_OK) s->input_set[slot] = 1;
  return status;
}

remat_status remat_session_step(remat_session* s, float* out_loss) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  remat_status status = remat::check_ready_to_run(s, "step");
  if (status != REMAT_OK) return status;
  if (s->plan->root->loss_scaling() != nullptr && s->loss_scale == 0.0f) {
    status = remat::load_loss_scale(s, /*zero_is_unset=*/true);
    if (status != REMAT_OK) return status;
  }
  s->outputs_ready = false;  // the step reuses the eval program's bytes
  const remat::StepContext ctx{
      s->plan->root->seed(), s->step, s->communicator,
      s->communicator != nullptr ? static_cast<uint64_t>(s->communicator->rank) : 0};
  const uint32_t n_ops = remat::step_op_count(s->plan);
  s->err.failed_op = 0;
  status = s->backend->begin_step(ctx, &s->err);
  uint32_t i = 0;
  for (; i < n_ops && status == REMAT_OK; ++i) status = s->backend->run_op(s->ops[i], ctx, &s->err);
  if (status != REMAT_OK && i > 0) remat::drain_buckets(s, i - 1, n_ops);
  if (status == REMAT_OK) status = s->backend->end_step(&s->err);
  if (status != REMAT_OK) {
    s->backend->sync(&s->err);  // drain what was queued; the first error's message is kept
  } else {
    status = s->backend->sync(&s->err);  // a GPU reports what its kernels found here
  }
  if (status == REMAT_ERROR_NONFINITE) {
    if (out_loss != nullptr) {
      // A download writes the message only when it fails, and then its failure is what counts.
      const remat::TensorRef& loss = s->tensors[s->plan->root->loss()];
      const remat_status read =
          s->backend->download(loss.region, loss.offset, out_loss, sizeof(float), &s->err);
      if (read != REMAT_OK) return read;
    }
    // A skipped update still uses up the step: the step count is the index of the batch (the
    // dropout stream, a schedule and the CLI's data are functions of it), so a run that skips
    // is replayed exactly from a saved state and always moves on.
    ++s->step;
    name_nonfinite_tensor(s);
    if (gradient_check_failed(s)) {
      // The scaled gradients overflowed: the scale halves, as the message says.
      const float before = s->loss_scale;
      const remat_status updated = remat::update_loss_scale(s, /*gradients_overflowed=*/true);
      if (updated != REMAT_OK) return updated;
      if (REMAT_MESSAGES) {
        const size_t used = strlen(s->error);
        snprintf(s->error + used, sizeof(s->error) - used, "; loss scale %g -> %g",
                 static_cast<double>(before), static_cast<double>(s->loss_scale));
      }
    }
    return status;
  }
  if (status == REMAT_OK && out_loss != nullptr) {
    const remat::TensorRef& loss = s->tensors[s->plan->root->loss()];
    status = s->backend->download(loss.region, loss.offset, out_loss, sizeof(float), &s->err);
  }
  if (status == REMAT_OK) status = remat::update_loss_scale(s, /*gradients_overflowed=*/false);
  if (status == REMAT_OK) ++s->step;
  return status;
}

remat_status remat_session_loss_scale(const remat_session* s, float* out_scale) {
  if (s == nullptr || out_scale == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (s->plan->root->loss_scaling() == nullptr) return REMAT_ERROR_NOT_FOUND;
  *out_scale = s->loss_scale;
  return REMAT_OK;
}

remat_status remat_session_write_param(remat_session* s, const char* name, const void* data,
                                       size_t bytes) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (name == nullptr || data == nullptr) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "write_param: %s is NULL", name ? "data" : "name");
  }
  uint32_t t = 0;
  if (!find_param(s->plan, name, &t))
    return FAIL(s, REMAT_ERROR_NOT_FOUND, "write_param: no parameter or buffer '%s'", name);
  const remat::TensorRef& ref = s->tensors[t];
  if (bytes != ref.bytes) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "write_param '%s': %zu bytes given, the parameter has %llu", name, bytes,
                static_cast<unsigned long long>(ref.bytes));
  }
  return s->backend->upload(ref.region, ref.offset, data, bytes, &s->err);
}

remat_status remat_session_read_param(remat_session* s, const char* name, void* out_data,
                                      size_t bytes) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (name == nullptr || out_data == nullptr) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "read_param: %s is NULL",
                name ? "out_data" : "name");
  }
  uint32_t t = 0;
  if (!find_param(s->plan, name, &t))
    return FAIL(s, REMAT_ERROR_NOT_FOUND, "read_param: no parameter or buffer '%s'", name);
  const remat::TensorRef& ref = s->tensors[t];
  if (bytes != ref.bytes) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT,
                "read_param '%s': buffer of %zu bytes, the parameter has %llu", name, bytes,
                static_cast<unsigned long long>(ref.bytes));
  }
  return s->backend->download(ref.region, ref.offset, out_data, bytes, &s->err);
}

remat_status remat_session_set_learning_rate(remat_session* s, float lr) {
  if (s == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  if (!(lr >= 0.0f) || !isfinite(lr)) {
    return FAIL(s, REMAT_ERROR_INVALID_ARGUMENT, "set_learning_rate: %g is not a finite rate >= 0",
                static_cast<double>(lr));
  }
  uint32_t updates = 0;
  const uint32_t n_ops = remat::step_op_count(s->plan);
  for (uint32_t i = 0; i < n_ops; ++i) {
    // The optimizers' lr attribute (plan/op_attrs.h); the op calls point at these copies, so
    // the next step reads it.
    const remat::FloatAttr* rate = remat::optimizer_lr(s->ops[i].code);
    if (rate != nullptr && rate->index < s->ops[i].num_fattrs) {
      s->fattrs[(s->ops[i].fattrs - s->fattrs) + rate->index] = lr;
      ++updates;
    }
  }
  if (updates == 0)
    return FAIL(s, REMAT_ERROR_NOT_FOUND, "set_learning_rate: the plan has no optimizer update");
  s->backend->attributes_changed();
  return REMAT_OK;
}

remat_status remat_session_learning_rate(const remat_session* s, float* out_lr) {
  if (s == nullptr || out_lr == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const uint32_t n_ops = remat::step_op_count(s->plan);
  for (uint32_t i = 0; i < n_ops; ++i) {
    const remat::FloatAttr* rate = remat::optimizer_lr(s->ops[i].code);
    if (rate != nullptr && rate->index < s->ops[i].num_fattrs) {
      *out_lr = s->ops[i].fattrs[rate->index];
      return REMAT_OK;
    }
  }
  return REMAT_ERROR_NOT_FOUND;
}

uint64_t remat_session_step_count(const remat_session* s) { return s ? s->step : 0; }

const char* remat_session_last_error(const remat_session* s) {
  return s ? s->error : "session is NULL";
}

}  // extern "C"
