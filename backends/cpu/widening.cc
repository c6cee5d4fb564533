// The CPU backend's widening of 16-bit float tensors (widening.h).
#include "backends/cpu/widening.h"

#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/parallel.h"
#include "plan/half_float.h"
#include "plan/ops.h"

namespace remat {
namespace cpu {
namespace {

// Elements a thread converts at least: below this a conversion stays on the calling thread.
constexpr int64_t kConvertGrain = 1 << 15;

constexpr int kMaxTensors = kMaxOpInputs + kMaxOpOutputs;

uint64_t slice_bytes(const TensorRef& t) {
  const uint64_t bytes = static_cast<uint64_t>(t.numel) * sizeof(float);
  return (bytes + kWideningAlignment - 1) / kWideningAlignment * kWideningAlignment;
}

bool same_tensor(const TensorRef& a, const TensorRef& b) {
  return a.region == b.region && a.offset == b.offset;
}

// The 16-bit tensors of one call and their slices, in order of first appearance.
struct Slices {
  const TensorRef* tensor[kMaxTensors];
  uint64_t offset[kMaxTensors];  // of the slice in the workspace
  int count = 0;
  uint64_t bytes = 0;

  // The slice of |t|'s tensor, or -1.
  int find(const TensorRef& t) const {
    for (int k = 0; k < count; ++k) {
      if (same_tensor(*tensor[k], t)) return k;
    }
    return -1;
  }

  // Gives |t| a slice unless its tensor has one.
  void add(const TensorRef* t) {
    if (find(*t) >= 0) return;
    tensor[count] = t;
    offset[count++] = bytes;
    bytes += slice_bytes(*t);
  }
};

// |call|'s 16-bit tensors in slices; when |call| does not run widened, none.
Slices slices_of(const OpCall& call) {
  Slices s;
  if (!runs_widened(call)) return s;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (is_half_float(call.inputs[i]->dtype)) s.add(call.inputs[i]);
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (is_half_float(call.outputs[o]->dtype)) s.add(call.outputs[o]);
  }
  return s;
}

// |t| as the float32 kernel sees its slice: same shape, dtype f32, 4 bytes an element.
TensorRef widened_ref(const TensorRef& t) {
  TensorRef w = t;
  w.dtype = REMAT_DTYPE_F32;
  w.bytes = static_cast<uint64_t>(t.numel) * sizeof(float);
  return w;
}

void widen(const KernelArgs& args, uint8_t dtype, const void* from, float* to, int64_t n) {
  const uint16_t* x = static_cast<const uint16_t*>(from);
  parallel_for(args, n, kConvertGrain, [&](int64_t begin, int64_t end, uint32_t) {
    widen_span(dtype, x + begin, to + begin, end - begin);
  });
}

void narrow(const KernelArgs& args, uint8_t dtype, const float* from, void* to, int64_t n) {
  uint16_t* y = static_cast<uint16_t*>(to);
  parallel_for(args, n, kConvertGrain, [&](int64_t begin, int64_t end, uint32_t) {
    narrow_span(dtype, from + begin, y + begin, end - begin);
  });
}

}  // namespace

bool runs_widened(const OpCall& call) {
  const OpInfo* info = op_info(call.code);
  if (info == nullptr || info->dtypes == OpDtypes::kAnyDtype) return false;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (is_half_float(call.inputs[i]->dtype)) return true;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (is_half_float(call.outputs[o]->dtype)) return true;
  }
  return false;
}

uint64_t widening_bytes(const OpCall& call) { return slices_of(call).bytes; }

remat_status run_widened(Kernel kernel, const KernelArgs& args, void* workspace) {
  const OpCall& call = *args.call;
  const Slices s = slices_of(call);
  uint8_t* base = static_cast<uint8_t*>(workspace);
  // The call the kernel sees: the same op over float32 views of the 16-bit tensors.
  OpCall wide = call;
  TensorRef refs[kMaxTensors];
  KernelArgs w = args;
  w.call = &wide;
  bool converted[kMaxTensors] = {};
  for (int i = 0; i < call.num_inputs; ++i) {
    const TensorRef& t = *call.inputs[i];
    if (!is_half_float(t.dtype)) continue;
    const int k = s.find(t);
    float* slice = reinterpret_cast<float*>(base + s.offset[k]);
    if (!converted[k]) {
      widen(args, t.dtype, args.in[i], slice, t.numel);
      converted[k] = true;
    }
    refs[i] = widened_ref(t);
    wide.inputs[i] = &refs[i];
    w.in[i] = slice;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (!is_half_float(t.dtype)) continue;
    const int k = s.find(t);
    refs[kMaxOpInputs + o] = widened_ref(t);
    wide.outputs[o] = &refs[kMaxOpInputs + o];
    w.out[o] = base + s.offset[k];
  }
  const remat_status status = kernel(w);
  if (status != REMAT_OK) return status;
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (is_half_float(t.dtype)) {
      narrow(args, t.dtype, static_cast<const float*>(w.out[o]), args.out[o], t.numel);
    }
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
