// The CPU backend's widening of 16-bit float tensors (widening.h).
#include "backends/cpu/widening.h"

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/parallel.h"
#include "plan/half_float.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace cpu {
namespace {

// Elements a thread converts at least: below this a conversion stays on the calling thread.
constexpr int64_t kConvertGrain = 1 << 15;

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

// to[i] = from[i] rounded to 16-bit |dtype| and widened back; |to| may be |from|.
void round_to_half(const KernelArgs& args, uint8_t dtype, const float* from, float* to, int64_t n) {
  constexpr int64_t kChunk = 1024;
  parallel_for(args, n, kConvertGrain, [&](int64_t begin, int64_t end, uint32_t) {
    uint16_t half[kChunk];
    for (int64_t at = begin; at < end; at += kChunk) {
      const int64_t count = end - at < kChunk ? end - at : kChunk;
      narrow_span(dtype, from + at, half, count);
      widen_span(dtype, half, to + at, count);
    }
  });
}

bool same_tensor(const TensorRef& x, const TensorRef& y) {
  return x.region == y.region && x.offset == y.offset;
}

}  // namespace

bool takes_bf16_operands(const OpCall& call) {
  const bool product = call.code == static_cast<uint16_t>(OpCode::kMatMul) ||
                       call.code == static_cast<uint16_t>(OpCode::kHeadMatMul);
  if (!product || product_operand_dtype(call) != REMAT_DTYPE_BF16 || !bf16_gemm_available()) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    // bfloat16, or float32 narrowed as it is read; and not read as another input too.
    const uint8_t dtype = call.inputs[i]->dtype;
    if (dtype != REMAT_DTYPE_BF16 && dtype != REMAT_DTYPE_F32) return false;
    for (int j = 2; j < call.num_inputs; ++j) {
      if (same_tensor(*call.inputs[i], *call.inputs[j])) return false;
    }
  }
  if (call.code != static_cast<uint16_t>(OpCode::kMatMul)) return true;
  // bf16_gemm takes alpha only with beta 0; the reduce mode sums its batch with beta 1, but for
  // one product over the stacked batch (A transposed, B not).
  const MatmulShape shape = matmul_shape(call);
  return shape.mode != MatmulMode::kReduce || (shape.trans_a && !shape.trans_b) ||
         fattr(call, attr::matmul::alpha) == 1.0f;
}

remat_status run_widened(Kernel kernel, const KernelArgs& args, void* workspace) {
  const OpCall& call = *args.call;
  const WideningSlices s = widening_slices(call);
  uint8_t* base = static_cast<uint8_t*>(workspace);
  // The call the kernel sees: the same op over float32 views of the 16-bit tensors.
  OpCallLists lists;
  OpCall wide = lists.adopt(call);
  TensorRef refs[kMaxWidenedTensors];
  KernelArgs w = args;
  w.call = &wide;
  bool converted[kMaxWidenedTensors] = {};
  const uint8_t product = product_operand_dtype(call);
  const bool bf16_operands = takes_bf16_operands(call);
  for (int i = 0; i < call.num_inputs; ++i) {
    const TensorRef& t = *call.inputs[i];
    const bool rounded = rounds_operand(call, i);
    if (bf16_operands && i < 2) {
      if (!rounded) continue;  // bfloat16 already: read as it is.
      // A float32 operand narrowed into the first half of its slice.
      const int k = s.find(t);
      uint16_t* slice = reinterpret_cast<uint16_t*>(base + s.offset[k]);
      if (!converted[k])
        narrow(args, product, static_cast<const float*>(args.in[i]), slice, t.numel);
      converted[k] = true;
      refs[i] = t;
      refs[i].dtype = product;
      refs[i].bytes = static_cast<uint64_t>(t.numel) * 2;
      lists.in[i] = &refs[i];
      w.in[i] = slice;
      continue;
    }
    if (!is_half_float(t.dtype) && !rounded) continue;
    const int k = s.find(t);
    float* slice = reinterpret_cast<float*>(base + s.offset[k]);
    if (!converted[k]) {
      // A product's operand of another type takes the product's 16 bits (widening_slices.h).
      if (is_half_float(t.dtype)) widen(args, t.dtype, args.in[i], slice, t.numel);
      if (rounded) {
        const float* from = is_half_float(t.dtype) ? slice : static_cast<const float*>(args.in[i]);
        round_to_half(args, product, from, slice, t.numel);
      }
      converted[k] = true;
    }
    refs[i] = widened_ref(t);
    lists.in[i] = &refs[i];
    w.in[i] = slice;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (!is_half_float(t.dtype)) continue;
    const int k = s.find(t);
    refs[kMaxOpInputs + o] = widened_ref(t);
    lists.out[o] = &refs[kMaxOpInputs + o];
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
