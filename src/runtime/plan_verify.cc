// Plan verification: nothing in a plan is trusted until every check here has passed.
#include <stdint.h>
#include <string.h>

#include "plan/checksum.h"
#include "plan/half_float.h"
#include "plan/op_check.h"
#include "plan/ops.h"
#include "plan/overlap_check.h"
#include "runtime/plan.h"
#include "runtime/port.h"

namespace remat {
namespace {

constexpr uint64_t kMaxElements = 1ull << 40;

const char* region_name(uint8_t region) {
  switch (region) {
    case 0: return "arena";
    case 1: return "persistent";
    case 2: return "host";
    default: return "unknown";
  }
}

uint64_t region_size(const fb::Plan* plan, uint8_t region) {
  switch (region) {
    case 0: return plan->arena_size();
    case 1: return plan->persistent_size();
    default: return plan->host_size();
  }
}

const char* tensor_name(const fb::Tensor* t) {
  return t->name() != nullptr ? t->name()->c_str() : "(unnamed)";
}

remat_status verify_tensor(const fb::Plan* plan, uint32_t index, ErrorBuffer* err) {
  const fb::Tensor* t = plan->tensors()->Get(index);
  const char* name = tensor_name(t);
  const uint8_t dtype = static_cast<uint8_t>(t->dtype());
  const uint8_t region = static_cast<uint8_t>(t->region());
  if (dtype_size(dtype) == 0) {
    return set_error(err, REMAT_ERROR_BAD_DTYPE, "tensor %u '%s': unknown dtype %u",
                     static_cast<unsigned>(index), name, dtype);
  }
  if (region > 2) {
    return set_error(err, REMAT_ERROR_OUT_OF_REGION, "tensor %u '%s': unknown region %u",
                     static_cast<unsigned>(index), name, region);
  }
  if (static_cast<uint8_t>(t->role()) > static_cast<uint8_t>(fb::Role::MAX)) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "tensor %u '%s': unknown role %u",
                     static_cast<unsigned>(index), name, static_cast<unsigned>(t->role()));
  }
  // Parameters and optimizer state are float32 masters (DESIGN.md, precision): a 16-bit working
  // copy is an arena tensor of its own. What the caller writes and reads by name (inputs,
  // labels, parameters, buffers, the loss) is float32 or an integer too.
  const fb::Role role = t->role();
  if (is_half_float(dtype) &&
      (role == fb::Role::Input || role == fb::Role::Label || role == fb::Role::Param ||
       role == fb::Role::State || role == fb::Role::Loss)) {
    return set_error(err, REMAT_ERROR_BAD_DTYPE,
                     "tensor %u '%s': role %s with dtype %s; parameters, optimizer state, inputs, "
                     "labels and the loss are f32 (or integers), 16-bit floats are for "
                     "activations, checkpoints and gradients",
                     static_cast<unsigned>(index), name, fb::EnumNameRole(role),
                     dtype == REMAT_DTYPE_BF16 ? "bf16" : "f16");
  }
  // The session draws initial values only as f32, and zeros of i64 (param_init.cc): another
  // init would leave the tensor as it was while the dataflow check counts it written.
  if (static_cast<uint8_t>(t->init()) > static_cast<uint8_t>(fb::Init::MAX)) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "tensor %u '%s': unknown init %u",
                     static_cast<unsigned>(index), name, static_cast<unsigned>(t->init()));
  }
  // Data is bytes, of any dtype (an imported model's constant indices are i32).
  const bool i64_zeros = t->dtype() == fb::DType::I64 && t->init() == fb::Init::Zeros;
  if (t->init() != fb::Init::None && t->init() != fb::Init::Data && t->dtype() != fb::DType::F32 &&
      !i64_zeros) {
    return set_error(err, REMAT_ERROR_BAD_DTYPE,
                     "tensor %u '%s': init %s on a tensor of dtype %u (only f32 is drawn, i64 set "
                     "to zeros; Data is any)",
                     static_cast<unsigned>(index), name, fb::EnumNameInit(t->init()), dtype);
  }
  const auto* shape = t->shape();
  if (shape == nullptr || shape->size() == 0 || shape->size() > REMAT_MAX_RANK) {
    return set_error(err, REMAT_ERROR_BAD_SHAPE, "tensor %u '%s': rank %u outside 1..%d",
                     static_cast<unsigned>(index), name,
                     static_cast<unsigned>(shape ? shape->size() : 0u), REMAT_MAX_RANK);
  }
  // The FlatBuffers verifier aligns a vector's length, not its 8-byte elements.
  if (reinterpret_cast<uintptr_t>(shape->data()) % alignof(int64_t) != 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "tensor %u '%s': shape vector is not 8-byte aligned",
                     static_cast<unsigned>(index), name);
  }
  uint64_t numel = 1;
  for (uint32_t d = 0; d < shape->size(); ++d) {
    const int64_t dim = shape->Get(d);
    if (dim < 1 || static_cast<uint64_t>(dim) > kMaxElements / numel) {
      return set_error(err, REMAT_ERROR_BAD_SHAPE,
                       "tensor %u '%s': dim %u is %lld (elements must be 1..2^40)",
                       static_cast<unsigned>(index), name, static_cast<unsigned>(d),
                       static_cast<long long>(dim));
    }
    numel *= static_cast<uint64_t>(dim);
  }
  if (t->size() != numel * dtype_size(dtype)) {
    return set_error(err, REMAT_ERROR_BAD_SHAPE,
                     "tensor %u '%s': size %llu, but its shape needs %llu bytes",
                     static_cast<unsigned>(index), name, static_cast<unsigned long long>(t->size()),
                     static_cast<unsigned long long>(numel * dtype_size(dtype)));
  }
  // Initial bytes: exactly the tensor's, on a persistent tensor of an Init.Data plan of format
  // 3 or later, and none on any other.
  const auto* data = t->init_data();
  if (t->init() == fb::Init::Data) {
    if (plan->format_version() < 3 || region != static_cast<uint8_t>(fb::Region::Persistent) ||
        data == nullptr || data->size() != t->size()) {
      return set_error(
          err, REMAT_ERROR_PLAN_CORRUPT,
          "tensor %u '%s': init Data needs %llu bytes of init_data on a persistent tensor of a "
          "format 3 plan (has %u bytes, region %s, format %u)",
          static_cast<unsigned>(index), name, static_cast<unsigned long long>(t->size()),
          static_cast<unsigned>(data ? data->size() : 0u), region_name(region),
          static_cast<unsigned>(plan->format_version()));
    }
  } else if (data != nullptr) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "tensor %u '%s': init_data on a tensor whose init is %s",
                     static_cast<unsigned>(index), name, fb::EnumNameInit(t->init()));
  }
  const uint64_t limit = region_size(plan, region);
  if (t->offset() % plan->alignment() != 0 || t->offset() > limit ||
      t->size() > limit - t->offset()) {
    return set_error(
        err, REMAT_ERROR_OUT_OF_REGION,
        "tensor %u '%s': bytes [%llu, +%llu) outside the %s region of %llu bytes "
        "(or offset not aligned to %u)",
        static_cast<unsigned>(index), name, static_cast<unsigned long long>(t->offset()),
        static_cast<unsigned long long>(t->size()), region_name(region),
        static_cast<unsigned long long>(limit), static_cast<unsigned>(plan->alignment()));
  }
  return REMAT_OK;
}

remat_status verify_op(const fb::Plan* plan, uint32_t index, ErrorBuffer* err) {
  const fb::Op* op = plan->ops()->Get(index);
  const uint16_t code = op->code();
  const OpInfo* info = op_info(code);
  if (info == nullptr) {
    return set_error(err, REMAT_ERROR_UNKNOWN_OP, "op %u: unknown opcode %u",
                     static_cast<unsigned>(index), code);
  }
  const uint32_t n_in = op->inputs() ? op->inputs()->size() : 0;
  const uint32_t n_out = op->outputs() ? op->outputs()->size() : 0;
  if (n_in > kMaxOpInputs || n_out > kMaxOpOutputs) {
    return set_error(err, REMAT_ERROR_BAD_ARITY, "op %u (%s): %u inputs and %u outputs",
                     static_cast<unsigned>(index), info->name, static_cast<unsigned>(n_in),
                     static_cast<unsigned>(n_out));
  }
  const uint32_t tensor_count = plan->tensors()->size();
  ShapeView in[kMaxOpInputs], out[kMaxOpOutputs];
  for (uint32_t k = 0; k < n_in + n_out; ++k) {
    const uint32_t t = k < n_in ? op->inputs()->Get(k) : op->outputs()->Get(k - n_in);
    if (t >= tensor_count) {
      return set_error(err, REMAT_ERROR_OUT_OF_REGION, "op %u (%s): %s %u names tensor %u of %u",
                       static_cast<unsigned>(index), info->name, k < n_in ? "input" : "output",
                       static_cast<unsigned>(k < n_in ? k : k - n_in), static_cast<unsigned>(t),
                       static_cast<unsigned>(tensor_count));
    }
    const fb::Tensor* x = plan->tensors()->Get(t);
    // Host-region tensors are reachable only through copies: spill writes one, prefetch reads one.
    const bool host = x->region() == fb::Region::Host;
    const bool slot = (code == static_cast<uint16_t>(OpCode::kSpill) && k >= n_in) ||
                      (code == static_cast<uint16_t>(OpCode::kPrefetch) && k < n_in);
    if (host != slot && !(host && code == static_cast<uint16_t>(OpCode::kWait))) {
      return set_error(
          err, REMAT_ERROR_OUT_OF_REGION, "op %u (%s): tensor '%s' is %sin the host region",
          static_cast<unsigned>(index), info->name, tensor_name(x), host ? "" : "not ");
    }
    ShapeView& v = k < n_in ? in[k] : out[k - n_in];
    v.dtype = static_cast<uint8_t>(x->dtype());
    v.rank = static_cast<uint8_t>(x->shape()->size());
    v.dims = x->shape()->data();
  }
  if (op->iattrs() != nullptr && op->iattrs()->size() > 0 &&
      reinterpret_cast<uintptr_t>(op->iattrs()->data()) % alignof(int64_t) != 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "op %u (%s): int attribute vector is not 8-byte aligned",
                     static_cast<unsigned>(index), info->name);
  }
  int64_t iattrs[16];
  float fattrs[16];
  const uint32_t n_i = op->iattrs() ? op->iattrs()->size() : 0;
  const uint32_t n_f = op->fattrs() ? op->fattrs()->size() : 0;
  if (n_i > 16 || n_f > 16) {
    return set_error(err, REMAT_ERROR_BAD_ARITY, "op %u (%s): %u int and %u float attributes",
                     static_cast<unsigned>(index), info->name, static_cast<unsigned>(n_i),
                     static_cast<unsigned>(n_f));
  }
  for (uint32_t k = 0; k < n_i; ++k) iattrs[k] = op->iattrs()->Get(k);
  for (uint32_t k = 0; k < n_f; ++k) fattrs[k] = op->fattrs()->Get(k);
  char message[256];
  const remat_status status =
      check_op(code, in, n_in, out, n_out, iattrs, n_i, fattrs, n_f, message, sizeof(message));
  if (status != REMAT_OK)
    return set_error(err, status, "op %u: %s", static_cast<unsigned>(index), message);
  // Updates work in place: output k is input k (param, then state). No other op may alias.
  // Kernels write outputs through restrict pointers: no tensor may be written twice by one op,
  // and an update's parameter, gradient and state must be distinct tensors.
  for (uint32_t a = 0; a < n_out; ++a) {
    for (uint32_t b = a + 1; b < n_out; ++b) {
      if (op->outputs()->Get(a) == op->outputs()->Get(b)) {
        return set_error(err, REMAT_ERROR_OVERLAP,
                         "op %u (%s): outputs %u and %u are the same tensor %u",
                         static_cast<unsigned>(index), info->name, static_cast<unsigned>(a),
                         static_cast<unsigned>(b), static_cast<unsigned>(op->outputs()->Get(a)));
      }
    }
  }
  if (is_in_place_update(code)) {
    for (uint32_t a = 0; a < n_in; ++a) {
      for (uint32_t b = a + 1; b < n_in; ++b) {
        if (op->inputs()->Get(a) == op->inputs()->Get(b)) {
          return set_error(err, REMAT_ERROR_OVERLAP,
                           "op %u (%s): inputs %u and %u are the same tensor %u",
                           static_cast<unsigned>(index), info->name, static_cast<unsigned>(a),
                           static_cast<unsigned>(b), static_cast<unsigned>(op->inputs()->Get(a)));
        }
      }
    }
  }
  for (uint32_t o = 0; o < n_out; ++o) {
    const uint32_t t = op->outputs()->Get(o);
    if (is_in_place_update(code)) {
      const uint32_t source = static_cast<uint32_t>(in_place_input(code, o));
      const uint32_t expected = op->inputs()->Get(source);
      if (t != expected || plan->tensors()->Get(t)->region() != fb::Region::Persistent) {
        return set_error(err, REMAT_ERROR_BAD_ARITY,
                         "op %u (%s): output %u must be input %u, a persistent tensor",
                         static_cast<unsigned>(index), info->name, static_cast<unsigned>(o),
                         static_cast<unsigned>(source));
      }
      continue;
    }
    for (uint32_t i = 0; i < n_in; ++i) {
      if (op->inputs()->Get(i) == t) {
        return set_error(err, REMAT_ERROR_OVERLAP,
                         "op %u (%s): output %u is also input %u (tensor %u)",
                         static_cast<unsigned>(index), info->name, static_cast<unsigned>(o),
                         static_cast<unsigned>(i), static_cast<unsigned>(t));
      }
    }
  }
  return REMAT_OK;
}

// Whether |t|'s name holds a NUL byte: the C ABI finds a bound tensor by a C string, which
// could never name it.
bool name_holds_nul(const fb::Tensor* t) {
  return t->name() != nullptr && memchr(t->name()->c_str(), 0, t->name()->size()) != nullptr;
}

remat_status verify_binding(const fb::Plan* plan, const flatbuffers::Vector<uint32_t>* ids,
                            const char* what, fb::Role role, ErrorBuffer* err) {
  const uint32_t count = ids ? ids->size() : 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t t = ids->Get(i);
    if (t >= plan->tensors()->size() || plan->tensors()->Get(t)->role() != role ||
        plan->tensors()->Get(t)->name() == nullptr) {
      return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                       "%s binding %u names tensor %u, which is not a named %s", what,
                       static_cast<unsigned>(i), static_cast<unsigned>(t), what);
    }
    if (name_holds_nul(plan->tensors()->Get(t))) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "%s binding %u names tensor %u, whose name holds a NUL byte", what,
                       static_cast<unsigned>(i), static_cast<unsigned>(t));
    }
  }
  return REMAT_OK;
}

// The eval program's fields: it fits in the op list, its loss is an f32 scalar in the arena that
// it may write, and its outputs are named tensors with distinct names. (What its ops may read and
// write is the dataflow check's.)
remat_status verify_eval_program(const fb::Plan* plan, ErrorBuffer* err) {
  const uint32_t n = plan->tensors()->size();
  const uint32_t outputs = plan->outputs() ? plan->outputs()->size() : 0;
  if (plan->format_version() < 2 && (plan->eval_ops() > 0 || outputs > 0)) {
    return set_error(
        err, REMAT_ERROR_PLAN_CORRUPT,
        "plan format version %u has no eval program, but it has %u eval ops and %u outputs",
        static_cast<unsigned>(plan->format_version()), static_cast<unsigned>(plan->eval_ops()),
        static_cast<unsigned>(outputs));
  }
  if (plan->eval_ops() > plan->ops()->size()) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "eval_ops is %u, but the plan has %u ops",
                     static_cast<unsigned>(plan->eval_ops()),
                     static_cast<unsigned>(plan->ops()->size()));
  }
  if (plan->eval_ops() == 0 && outputs > 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "the plan has %u outputs but no eval program to write them",
                     static_cast<unsigned>(outputs));
  }
  if (plan->eval_ops() > 0) {
    // In the arena and no binding: the eval program writes it, and nothing a step reads.
    const uint32_t t = plan->eval_loss();
    if (t >= n || t == plan->loss() || !eval_may_write(plan->tensors()->Get(t)) ||
        plan->tensors()->Get(t)->size() != 4 ||
        plan->tensors()->Get(t)->dtype() != fb::DType::F32) {
      return set_error(
          err, REMAT_ERROR_OUT_OF_REGION,
          "eval_loss names tensor %u, which is not an f32 scalar of its own in the arena",
          static_cast<unsigned>(t));
    }
  }
  for (uint32_t i = 0; i < outputs; ++i) {
    const uint32_t t = plan->outputs()->Get(i);
    if (t >= n || plan->tensors()->Get(t)->name() == nullptr ||
        plan->tensors()->Get(t)->region() == fb::Region::Host) {
      return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                       "output binding %u names tensor %u, which is not a named tensor "
                       "outside the host region",
                       static_cast<unsigned>(i), static_cast<unsigned>(t));
    }
    if (name_holds_nul(plan->tensors()->Get(t))) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "output binding %u names tensor %u, whose name holds a NUL byte",
                       static_cast<unsigned>(i), static_cast<unsigned>(t));
    }
    // remat_session_read_output() hands the caller float32 (or integer) bytes.
    const uint8_t dtype = static_cast<uint8_t>(plan->tensors()->Get(t)->dtype());
    if (is_half_float(dtype)) {
      return set_error(err, REMAT_ERROR_BAD_DTYPE,
                       "output binding %u '%s' is %s; outputs are read as f32 (or integers)",
                       static_cast<unsigned>(i), tensor_name(plan->tensors()->Get(t)),
                       dtype == REMAT_DTYPE_BF16 ? "bf16" : "f16");
    }
    for (uint32_t j = 0; j < i; ++j) {
      const uint32_t u = plan->outputs()->Get(j);
      if (u == t ||
          strcmp(tensor_name(plan->tensors()->Get(u)), tensor_name(plan->tensors()->Get(t))) == 0) {
        return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "output bindings %u and %u are both '%s'",
                         static_cast<unsigned>(j), static_cast<unsigned>(i),
                         tensor_name(plan->tensors()->Get(t)));
      }
    }
  }
  return REMAT_OK;
}

// Lifetimes come from the op list itself, not from the plan's informational fields.
remat_status verify_no_overlap(const fb::Plan* plan, const int32_t* copy_end, ErrorBuffer* err) {
  const uint32_t n = plan->tensors()->size();
  const int32_t op_count = static_cast<int32_t>(plan->ops()->size());
  PlacedBuffer* buffers = static_cast<PlacedBuffer*>(port_alloc(sizeof(PlacedBuffer) * (n + 1), 8));
  PlacedBuffer* in_region =
      static_cast<PlacedBuffer*>(port_alloc(sizeof(PlacedBuffer) * (n + 1), 8));
  uint32_t* order = static_cast<uint32_t*>(port_alloc(sizeof(uint32_t) * (n + 1), 8));
  uint32_t* tensor_of = static_cast<uint32_t*>(port_alloc(sizeof(uint32_t) * (n + 1), 8));
  remat_status status = REMAT_OK;
  if (buffers == nullptr || in_region == nullptr || order == nullptr || tensor_of == nullptr) {
    status = set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory to verify %u tensors",
                       static_cast<unsigned>(n));
  }
  for (uint32_t t = 0; t < n && status == REMAT_OK; ++t) {
    const fb::Tensor* x = plan->tensors()->Get(t);
    // Persistent tensors, inputs and labels keep their bytes across steps.
    if (x->region() == fb::Region::Persistent || x->role() == fb::Role::Input ||
        x->role() == fb::Role::Label) {
      buffers[t] = PlacedBuffer{x->offset(), x->size(), -1, op_count};
    } else {
      buffers[t] =
          PlacedBuffer{x->offset(), x->size(), op_count, -1};  // unused until an op names it
    }
  }
  for (int32_t i = 0; i < op_count && status == REMAT_OK; ++i) {
    const fb::Op* op = plan->ops()->Get(i);
    for (int pass = 0; pass < 2; ++pass) {
      const auto* ids = pass == 0 ? op->inputs() : op->outputs();
      for (uint32_t k = 0; ids && k < ids->size(); ++k) {
        PlacedBuffer& b = buffers[ids->Get(k)];
        if (b.first > i) b.first = i;
        if (b.last < i) b.last = i;
      }
    }
  }
  for (uint32_t t = 0; t < n && status == REMAT_OK; ++t) {
    if (copy_end[t] > buffers[t].last) buffers[t].last = copy_end[t];
  }
  // The eval program's loss and outputs are read by the caller after its last op.
  if (status == REMAT_OK && plan->eval_ops() > 0) buffers[plan->eval_loss()].last = op_count;
  for (uint32_t i = 0; status == REMAT_OK && plan->outputs() && i < plan->outputs()->size(); ++i) {
    buffers[plan->outputs()->Get(i)].last = op_count;
  }
  for (uint8_t region = 0; region < 3 && status == REMAT_OK; ++region) {
    uint32_t m = 0;
    for (uint32_t t = 0; t < n; ++t) {
      if (static_cast<uint8_t>(plan->tensors()->Get(t)->region()) != region) continue;
      if (buffers[t].first > buffers[t].last) continue;
      in_region[m] = buffers[t];
      tensor_of[m] = t;
      ++m;
    }
    uint32_t a = 0, b = 0;
    if (!no_overlap_in_time_and_space(in_region, m, order, &a, &b)) {
      const fb::Tensor* x = plan->tensors()->Get(tensor_of[a]);
      const fb::Tensor* y = plan->tensors()->Get(tensor_of[b]);
      status = set_error(err, REMAT_ERROR_OVERLAP,
                         "tensors '%s' [%llu, +%llu) and '%s' [%llu, +%llu) share %s bytes while "
                         "both are live (ops %d..%d and %d..%d)",
                         tensor_name(x), static_cast<unsigned long long>(x->offset()),
                         static_cast<unsigned long long>(x->size()), tensor_name(y),
                         static_cast<unsigned long long>(y->offset()),
                         static_cast<unsigned long long>(y->size()), region_name(region),
                         static_cast<int>(in_region[a].first), static_cast<int>(in_region[a].last),
                         static_cast<int>(in_region[b].first), static_cast<int>(in_region[b].last));
    }
  }
  // Freed last-allocated first: the bare-metal port's pool takes back blocks in that order.
  port_free(tensor_of);
  port_free(order);
  port_free(in_region);
  port_free(buffers);
  return status;
}

}  // namespace

uint32_t dtype_size(uint32_t dtype) {
  switch (dtype) {
    case REMAT_DTYPE_F32:
    case REMAT_DTYPE_I32: return 4;
    case REMAT_DTYPE_F16:
    case REMAT_DTYPE_BF16: return 2;
    case REMAT_DTYPE_I64: return 8;
    default: return 0;
  }
}

// Region is plan vocabulary written by hand (plan/region.h): it must stay the schema's enum.
static_assert(static_cast<int>(Region::kArena) == static_cast<int>(fb::Region::Arena) &&
                  static_cast<int>(Region::kPersistent) ==
                      static_cast<int>(fb::Region::Persistent) &&
                  static_cast<int>(Region::kHost) == static_cast<int>(fb::Region::Host) &&
                  kRegionCount == static_cast<int>(fb::Region::MAX) + 1,
              "plan/region.h and plan.fbs disagree on Region");

void tensor_ref(const fb::Plan* plan, uint32_t index, TensorRef* out) {
  const fb::Tensor* t = plan->tensors()->Get(index);
  out->region = static_cast<Region>(t->region());
  out->dtype = static_cast<uint8_t>(t->dtype());
  out->rank = static_cast<uint8_t>(t->shape()->size());
  out->offset = static_cast<TensorBytes>(t->offset());
  out->bytes = static_cast<TensorBytes>(t->size());
  out->numel = 1;
  for (uint32_t d = 0; d < REMAT_MAX_RANK; ++d) {
    out->dims[d] = d < out->rank ? static_cast<TensorDim>(t->shape()->Get(d)) : 1;
    if (d < out->rank) out->numel *= out->dims[d];
  }
}

remat_status verify_plan(const uint8_t* bytes, size_t size, const fb::Plan** out_root,
                         ErrorBuffer* err) {
  if (bytes == nullptr) return set_error(err, REMAT_ERROR_INVALID_ARGUMENT, "plan bytes are NULL");
  if (size < 8 || !fb::PlanBufferHasIdentifier(bytes)) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "not a remat plan: %zu bytes without the 'RMPL' identifier at byte 4", size);
  }
  // FlatBuffers reads 8-byte scalars in place; its verifier rejects misaligned ones as corrupt,
  // which would hide the real cause. (Bytes that are no plan at all are called corrupt above.)
  if (reinterpret_cast<uintptr_t>(bytes) % 8 != 0) {
    return set_error(err, REMAT_ERROR_MISALIGNED, "plan bytes at %p are not aligned to 8 bytes",
                     static_cast<const void*>(bytes));
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "plan of %zu bytes is larger than FlatBuffers allows", size);
  }
  flatbuffers::Verifier verifier(bytes, size, /*max_depth=*/16, /*max_tables=*/10000000);
  if (!fb::VerifyPlanBuffer(verifier)) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "plan of %zu bytes fails the FlatBuffers verifier (truncated or damaged)",
                     size);
  }
  const fb::Plan* plan = fb::GetPlan(bytes);
  if (plan->format_version() < REMAT_PLAN_FORMAT_OLDEST_VERSION ||
      plan->format_version() > REMAT_PLAN_FORMAT_VERSION) {
    return set_error(err, REMAT_ERROR_PLAN_VERSION,
                     "plan format version %u, this runtime reads versions %d to %d",
                     static_cast<unsigned>(plan->format_version()),
                     REMAT_PLAN_FORMAT_OLDEST_VERSION, REMAT_PLAN_FORMAT_VERSION);
  }
  // The checksum (plan/checksum.h) before any field is read: a damaged, truncated or extended
  // plan is refused here, whatever else its bytes would say.
  size_t checksum_at = 0;
  if (!plan_checksum_offset(bytes, &checksum_at)) {
    if (plan->format_version() >= 4) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "plan format version %u has no checksum (every plan from version 4 on has)",
                       static_cast<unsigned>(plan->format_version()));
    }
  } else {
    const uint32_t stored = plan->checksum();
    const uint32_t computed = plan_checksum(bytes, size, checksum_at);
    if (stored != computed) {
      return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                       "checksum mismatch: the plan says %08x, its %zu bytes give %08x (damaged, "
                       "truncated, or bytes appended)",
                       static_cast<unsigned>(stored), size, static_cast<unsigned>(computed));
    }
  }
  if (plan->tensors() == nullptr || plan->ops() == nullptr) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "plan has no %s table",
                     plan->tensors() == nullptr ? "tensors" : "ops");
  }
  const uint32_t align = plan->alignment();
  // At least 4: every element is 4 bytes (f32, i32) and kernels load them aligned.
  if (align < 4 || align > 4096 || (align & (align - 1)) != 0) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT, "alignment %u is not a power of two in 4..4096",
                     static_cast<unsigned>(align));
  }
  // A region must be addressable here: on a 32-bit target a larger size would be truncated.
  for (uint8_t region = 0; region < 3; ++region) {
    if (region_size(plan, region) > static_cast<uint64_t>(PTRDIFF_MAX)) {
      return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                       "the %s region of %llu bytes cannot be addressed here", region_name(region),
                       static_cast<unsigned long long>(region_size(plan, region)));
    }
  }
  const uint32_t n = plan->tensors()->size();
  for (uint32_t t = 0; t < n; ++t) {
    const remat_status s = verify_tensor(plan, t, err);
    if (s != REMAT_OK) return s;
  }
  for (uint32_t i = 0; i < plan->ops()->size(); ++i) {
    const remat_status s = verify_op(plan, i, err);
    if (s != REMAT_OK) return s;
  }
  remat_status s = verify_binding(plan, plan->inputs(), "input", fb::Role::Input, err);
  if (s == REMAT_OK) s = verify_binding(plan, plan->labels(), "label", fb::Role::Label, err);
  if (s == REMAT_OK) s = verify_binding(plan, plan->params(), "param", fb::Role::Param, err);
  if (s == REMAT_OK) s = verify_binding(plan, plan->buffers(), "buffer", fb::Role::State, err);
  if (s != REMAT_OK) return s;
  if (plan->loss() >= n || plan->tensors()->Get(plan->loss())->region() != fb::Region::Persistent ||
      plan->tensors()->Get(plan->loss())->size() != 4 ||
      plan->tensors()->Get(plan->loss())->dtype() != fb::DType::F32) {
    return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                     "loss names tensor %u, which is not a persistent f32 scalar",
                     static_cast<unsigned>(plan->loss()));
  }
  s = verify_eval_program(plan, err);
  if (s != REMAT_OK) return s;
  if (plan->matmul_precision() > fb::MatmulPrecision::MAX) {
    return set_error(err, REMAT_ERROR_PLAN_CORRUPT,
                     "matmul_precision is %u; the known values are 0 (fp32) and 1 (tf32)",
                     static_cast<unsigned>(plan->matmul_precision()));
  }
  s = verify_loss_scaling(plan, err);
  if (s != REMAT_OK) return s;
  int32_t* copy_end = static_cast<int32_t*>(port_alloc(sizeof(int32_t) * (n + 1), 8));
  if (copy_end == nullptr)
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory to verify %u tensors",
                     static_cast<unsigned>(n));
  s = verify_dataflow(plan, copy_end, err);
  if (s == REMAT_OK) s = verify_no_overlap(plan, copy_end, err);
  port_free(copy_end);
  if (s != REMAT_OK) return s;
  *out_root = plan;
  return REMAT_OK;
}

}  // namespace remat
