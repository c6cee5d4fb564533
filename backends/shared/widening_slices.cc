// The widening workspace's slices (widening_slices.h).
#include "backends/shared/widening_slices.h"

#include "plan/half_float.h"
#include "plan/ops.h"

namespace remat {
namespace {

uint64_t slice_bytes(const TensorRef& t) {
  return aligned_slice_bytes(static_cast<uint64_t>(t.numel) * sizeof(float));
}

// Gives |t| a slice of |s| unless its tensor has one.
void add(WideningSlices& s, const TensorRef* t) {
  if (s.find(*t) >= 0) return;
  s.tensor[s.count] = t;
  s.offset[s.count++] = s.bytes;
  s.bytes += slice_bytes(*t);
}

}  // namespace

bool same_tensor(const TensorRef& x, const TensorRef& y) {
  return x.region == y.region && x.offset == y.offset;
}

int WideningSlices::find(const TensorRef& t) const {
  for (int k = 0; k < count; ++k) {
    if (same_tensor(*tensor[k], t)) return k;
  }
  return -1;
}

bool moves_bytes(const OpCall& call) {
  if (!moves_elements(call.code) || call.num_outputs < 1) return false;
  const uint8_t dtype = call.outputs[0]->dtype;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (call.inputs[i]->dtype != dtype) return false;
  }
  for (int o = 1; o < call.num_outputs; ++o) {
    if (call.outputs[o]->dtype != dtype) return false;
  }
  return true;
}

bool runs_widened(const OpCall& call) {
  const OpInfo* info = op_info(call.code);
  if (info == nullptr || info->dtypes == OpDtypes::kAnyDtype || moves_bytes(call)) return false;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (is_half_float(call.inputs[i]->dtype)) return true;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (is_half_float(call.outputs[o]->dtype)) return true;
  }
  return false;
}

uint8_t product_operand_dtype(const OpCall& call) {
  switch (static_cast<OpCode>(call.code)) {
    case OpCode::kMatMul:
    case OpCode::kHeadMatMul:
    case OpCode::kConv:
    case OpCode::kConvGradInput:
    case OpCode::kConvGradWeight: break;
    default: return REMAT_DTYPE_F32;
  }
  for (int i = 0; i < 2 && i < call.num_inputs; ++i) {
    if (is_half_float(call.inputs[i]->dtype)) return call.inputs[i]->dtype;
  }
  // Both operands float32 (a network's input and its first layer's weight): the product's
  // output decides, as autocast runs the first layer in the lower precision too.
  if (call.num_outputs > 0 && is_half_float(call.outputs[0]->dtype)) return call.outputs[0]->dtype;
  return REMAT_DTYPE_F32;
}

bool matmul_operands_of_one_type(const OpCall& call) {
  const uint8_t product = product_operand_dtype(call);
  if (call.code != static_cast<uint16_t>(OpCode::kMatMul) || product == REMAT_DTYPE_F32)
    return false;
  for (int i = 0; i < 2; ++i) {
    const uint8_t dtype = call.inputs[i]->dtype;
    if (dtype != product && dtype != REMAT_DTYPE_F32) return false;
  }
  return true;
}

bool rounds_operand(const OpCall& call, int i) {
  const uint8_t product = product_operand_dtype(call);
  return i < 2 && product != REMAT_DTYPE_F32 && call.inputs[i]->dtype != product;
}

WideningSlices widening_slices(const OpCall& call, uint32_t as_is) {
  WideningSlices s;
  if (!runs_widened(call)) return s;
  for (int i = 0; i < call.num_inputs; ++i) {
    if ((as_is >> i) & 1u) continue;
    if (is_half_float(call.inputs[i]->dtype) || rounds_operand(call, i)) add(s, call.inputs[i]);
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if ((as_is >> (kMaxOpInputs + o)) & 1u) continue;
    if (is_half_float(call.outputs[o]->dtype)) add(s, call.outputs[o]);
  }
  return s;
}

uint64_t widening_bytes(const OpCall& call) { return widening_slices(call).bytes; }

TensorRef widened_ref(const TensorRef& t) {
  TensorRef w = t;
  w.dtype = REMAT_DTYPE_F32;
  w.bytes = static_cast<uint64_t>(t.numel) * sizeof(float);
  return w;
}

}  // namespace remat
