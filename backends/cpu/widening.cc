// The CPU backend's widening of 16-bit float tensors (widening.h).
#include "backends/cpu/widening.h"

#include <atomic>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/parallel.h"
#include "backends/shared/batch_chunks.h"
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

// |call|'s slices on the CPU: none for a tensor its kernel reads or writes in 16 bits as it is.
WideningSlices cpu_slices(const OpCall& call) {
  uint32_t as_is = 0;
  for (int i = 0; i < call.num_inputs; ++i) {
    if (reads_16_bit_input(call, i)) as_is |= 1u << i;
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    if (writes_16_bit_output(call, o)) as_is |= 1u << (kMaxOpInputs + o);
  }
  return widening_slices(call, as_is);
}

// Whether |call| is layer norm or its gradient over rows short enough for kNormRowSlots rows in
// the thread's strip (ops/norm.cc reads and writes its 16-bit rows through them).
bool norm_rows_fit(const OpCall& call) {
  if (call.code == static_cast<uint16_t>(OpCode::kLayerNorm)) {
    return last_dim(*call.inputs[0]) * kNormRowSlots <= kProductStripFloats;
  }
  if (call.code == static_cast<uint16_t>(OpCode::kLayerNormGrad)) {
    return last_dim(*call.inputs[1]) * kNormRowSlots <= kProductStripFloats;
  }
  return false;
}

// Elements a thread takes at least in run_per_element(): the elementwise kernels' own grain
// (ops/elementwise.cc), a multiple of kPerElementChunk.
constexpr int64_t kPerElementGrain = 1 << 14;
static_assert(kPerElementGrain % kPerElementChunk == 0, "a thread's part is whole chunks");

// |t| as a float32 kernel sees a chunk of |count| of its elements.
TensorRef chunk_ref(const TensorRef& t, int64_t count) {
  TensorRef c = widened_ref(t);
  c.rank = 1;
  c.dims[0] = count;
  c.numel = count;
  c.bytes = static_cast<uint64_t>(count) * sizeof(float);
  return c;
}

// run_widened() for an op that runs_per_element(): each thread takes a run of elements and goes
// through it kPerElementChunk at a time, its 16-bit inputs' chunks widened on the stack, the kernel
// run on the chunks on this thread alone, a 16-bit output's chunk rounded back. Every element is
// computed from the same float32 values as the whole-tensor widening computes it, so the bits
// are the same, without the float32 copies' trips through memory.
remat_status run_per_element(Kernel kernel, const KernelArgs& args) {
  const OpCall& call = *args.call;
  const int64_t n = call.outputs[0]->numel;
  std::atomic<int> failed{REMAT_OK};
  parallel_for(args, n, kPerElementGrain, [&](int64_t begin, int64_t end, uint32_t) {
    alignas(64) float chunks[kMaxPerElementInputs + 1][kPerElementChunk];
    OpCallLists lists;
    OpCall part = lists.adopt(call);
    TensorRef refs[kMaxPerElementInputs + 1];
    KernelArgs w = args;
    w.call = &part;
    w.team = nullptr;
    w.threads = 1;
    const TensorRef& y = *call.outputs[0];
    for (int64_t at = begin; at < end; at += kPerElementChunk) {
      const int64_t count = end - at < kPerElementChunk ? end - at : kPerElementChunk;
      for (int i = 0; i < call.num_inputs; ++i) {
        const TensorRef& t = *call.inputs[i];
        refs[i] = chunk_ref(t, count);
        lists.in[i] = &refs[i];
        if (is_half_float(t.dtype)) {
          widen_span(t.dtype, static_cast<const uint16_t*>(args.in[i]) + at, chunks[i], count);
          w.in[i] = chunks[i];
        } else {
          w.in[i] = static_cast<float*>(args.in[i]) + at;
        }
      }
      refs[kMaxPerElementInputs] = chunk_ref(y, count);
      lists.out[0] = &refs[kMaxPerElementInputs];
      float* const out = is_half_float(y.dtype) ? chunks[kMaxPerElementInputs]
                                                : static_cast<float*>(args.out[0]) + at;
      w.out[0] = out;
      const remat_status status = kernel(w);
      if (status != REMAT_OK) {
        int expected = REMAT_OK;
        failed.compare_exchange_strong(expected, status);
        return;
      }
      if (is_half_float(y.dtype)) {
        narrow_span(y.dtype, out, static_cast<uint16_t*>(args.out[0]) + at, count);
      }
    }
  });
  return static_cast<remat_status>(failed.load());
}

remat_status run_widened_whole(Kernel kernel, const KernelArgs& args, void* workspace);

// The bytes of a product operand's 16-bit copy in the workspace.
uint64_t half_copy_bytes(const TensorRef& t) {
  return aligned_slice_bytes(static_cast<uint64_t>(t.numel) * 2);
}

// Operand |i| of a product that rounds it (rounds_operand) as another operand's copy holds it
// already: the index of that operand, else -1.
int same_rounded_operand(const OpCall& call, int i) {
  return i == 1 && rounds_operand(call, 0) && same_tensor(*call.inputs[0], *call.inputs[1]) ? 0
                                                                                            : -1;
}

// Where operand |i|'s 16-bit copy of a product_reads_16_bit() |call| starts in the workspace: the
// copies of the operands its row chunks do not split (a weight) first, so that they keep their
// place from chunk to chunk.
uint64_t copy_offset(const OpCall& call, int i) {
  uint64_t at = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const bool split = pass == 1;
    for (int j = 0; j < 2; ++j) {
      const TensorRef& t = *call.inputs[j];
      if (!rounds_operand(call, j) || same_rounded_operand(call, j) >= 0 ||
          splits_by_batch(call, t) != split)
        continue;
      if (j == i) return at;
      at += half_copy_bytes(t);
    }
  }
  return at;
}

// run_widened() for a product_reads_16_bit() call (or a chunk of its rows, the first |first|):
// its operands of another dtype than the product's rounded into 16-bit copies in the workspace
// (those its chunks do not split only in the first chunk), then the kernel on the operands in
// 16 bits (it rounds a 16-bit output itself).
remat_status run_product_part(Kernel kernel, const KernelArgs& args, void* workspace,
                              int64_t first) {
  const OpCall& call = *args.call;
  const uint8_t product = product_operand_dtype(call);
  OpCallLists lists;
  OpCall part = lists.adopt(call);
  TensorRef refs[2];
  KernelArgs w = args;
  w.call = &part;
  for (int i = 0; i < 2; ++i) {
    if (!rounds_operand(call, i)) continue;
    const TensorRef& t = *call.inputs[i];
    refs[i] = t;
    refs[i].dtype = product;
    refs[i].bytes = static_cast<uint64_t>(t.numel) * 2;
    lists.in[i] = &refs[i];
    const int same = same_rounded_operand(call, i);
    if (same >= 0) {
      w.in[i] = w.in[same];
      continue;
    }
    uint16_t* copy =
        reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(workspace) + copy_offset(call, i));
    w.in[i] = copy;
    if (first > 0 && !splits_by_batch(call, t)) continue;  // rounded by the first chunk
    if (is_half_float(t.dtype)) {  // the other 16-bit type: exact in float32 on the way
      constexpr int64_t kChunk = 1024;
      parallel_for(args, t.numel, kConvertGrain, [&](int64_t begin, int64_t end, uint32_t) {
        float wide[kChunk];
        const uint16_t* x = static_cast<const uint16_t*>(args.in[i]);
        for (int64_t k = begin; k < end; k += kChunk) {
          const int64_t count = end - k < kChunk ? end - k : kChunk;
          widen_span(t.dtype, x + k, wide, count);
          narrow_span(product, wide, copy + k, count);
        }
      });
    } else {
      narrow(args, product, static_cast<const float*>(args.in[i]), copy, t.numel);
    }
  }
  return kernel(w);
}

// run_widened() for a product_reads_16_bit() call: whole, or product_chunk_rows() rows at a
// time, a sum's chunks after the first adding into C.
remat_status run_product(Kernel kernel, const KernelArgs& args, void* workspace) {
  const OpCall& call = *args.call;
  const int64_t rows = product_chunk_rows(call);
  if (rows == 0) return run_product_part(kernel, args, workspace, 0);
  const bool sums = matmul_rows(call) == MatmulRows::kSumOverRows;
  return for_each_batch_chunk(call, rows, [&](const OpCall& part, int64_t first) {
    KernelArgs w = args;
    w.call = &part;
    w.accumulate = sums && first > 0;
    for (int i = 0; i < call.num_inputs; ++i) {
      w.in[i] =
          static_cast<uint8_t*>(args.in[i]) + (part.inputs[i]->offset - call.inputs[i]->offset);
    }
    w.out[0] =
        static_cast<uint8_t*>(args.out[0]) + (part.outputs[0]->offset - call.outputs[0]->offset);
    return run_product_part(kernel, w, workspace, first);
  });
}

// Bytes of the workspace a sum's chunk after the first writes its float32 |outputs| into.
uint64_t partial_sum_bytes(const OpCall& call) {
  uint64_t bytes = 0;
  for (int o = 0; o < call.num_outputs; ++o) bytes += aligned_slice_bytes(call.outputs[o]->bytes);
  return bytes;
}

// run_widened() for an op that computes_per_batch_item() or sums_into_float32(),
// batch_chunk_items() at a time: each chunk's tensors widened into the workspace and the kernel
// run on them, with its threads. The kernel computes every item from that item's inputs alone,
// so the bits are those of the whole-batch widening; a sum's chunks after the first write into
// the workspace past their slices, and their sums are added into the outputs.
remat_status run_in_batch_chunks(Kernel kernel, const KernelArgs& args, void* workspace,
                                 int64_t items) {
  const OpCall& call = *args.call;
  const int64_t batch = batch_of(call);
  const bool sums = sums_over_batch_items(call.code);
  return for_each_batch_chunk(call, items, [&](const OpCall& part, int64_t first) {
    KernelArgs w = args;
    w.call = &part;
    w.batch_whole = batch;
    w.batch_first = first;
    for (int i = 0; i < call.num_inputs; ++i) {
      w.in[i] =
          static_cast<uint8_t*>(args.in[i]) + (part.inputs[i]->offset - call.inputs[i]->offset);
    }
    uint8_t* partial = static_cast<uint8_t*>(workspace) + cpu_slices(part).bytes;
    for (int o = 0; o < call.num_outputs; ++o) {
      if (sums && first > 0) {
        w.out[o] = partial;
        partial += aligned_slice_bytes(call.outputs[o]->bytes);
        continue;
      }
      w.out[o] =
          static_cast<uint8_t*>(args.out[o]) + (part.outputs[o]->offset - call.outputs[o]->offset);
    }
    const remat_status status = run_widened_whole(kernel, w, workspace);
    if (status != REMAT_OK || !sums || first == 0) return status;
    for (int o = 0; o < call.num_outputs; ++o) {
      float* sum = static_cast<float*>(args.out[o]);
      const float* chunk = static_cast<const float*>(w.out[o]);
      parallel_for(args, call.outputs[o]->numel, kConvertGrain,
                   [&](int64_t begin, int64_t end, uint32_t) {
                     for (int64_t i = begin; i < end; ++i) sum[i] += chunk[i];
                   });
    }
    return REMAT_OK;
  });
}

}  // namespace

int64_t product_chunk_rows(const OpCall& call) {
  if (matmul_rows(call) == MatmulRows::kWhole) return 0;
  const int64_t rows = batch_of(call);
  uint64_t row_bytes = 0;  // float32 bytes of a row of the split operands it rounds
  for (int i = 0; i < 2; ++i) {
    const TensorRef& t = *call.inputs[i];
    if (rounds_operand(call, i) && same_rounded_operand(call, i) < 0 && splits_by_batch(call, t))
      row_bytes += static_cast<uint64_t>(t.numel / rows) * sizeof(float);
  }
  if (row_bytes == 0) return 0;
  const int64_t items = widening_chunk_items(row_bytes, rows);
  return items < rows ? items : 0;
}

uint64_t product_slice_bytes(const OpCall& call) {
  const int64_t rows = product_chunk_rows(call);
  if (rows > 0) {  // the first chunk's copies: the most
    OpCallLists lists;
    TensorRef refs[kMaxOpInputs + kMaxOpOutputs];
    return product_slice_bytes(batch_chunk_call(call, 0, rows, lists, refs));
  }
  uint64_t bytes = 0;
  for (int i = 0; i < 2; ++i) {
    if (rounds_operand(call, i) && same_rounded_operand(call, i) < 0)
      bytes += half_copy_bytes(*call.inputs[i]);
  }
  return bytes;
}

int64_t batch_chunk_items(const OpCall& call) {
  if (!(computes_per_batch_item(call.code) || sums_into_float32(call)) || !runs_widened(call))
    return 0;
  const int64_t batch = batch_of(call);
  const int64_t items = widening_chunk_items(batch_item_bytes(call, cpu_slices(call)), batch);
  return items < batch ? items : 0;
}

bool runs_per_element(const OpCall& call) {
  if (!computes_per_element(call.code)) return false;
  if (call.num_outputs != 1 || call.num_inputs > kMaxPerElementInputs) return false;
  const TensorRef& y = *call.outputs[0];
  for (int i = 0; i < call.num_inputs; ++i) {
    if (call.inputs[i]->numel != y.numel || same_tensor(*call.inputs[i], y)) return false;
  }
  return true;
}

uint64_t cpu_widening_bytes(const OpCall& call) {
  if (runs_per_element(call)) return 0;
  if (product_reads_16_bit(call)) return product_slice_bytes(call);
  const int64_t items = batch_chunk_items(call);
  if (items == 0) return cpu_slices(call).bytes;
  OpCallLists lists;
  TensorRef refs[kMaxOpInputs + kMaxOpOutputs];
  const uint64_t slices = cpu_slices(batch_chunk_call(call, 0, items, lists, refs)).bytes;
  return slices + (sums_over_batch_items(call.code) ? partial_sum_bytes(call) : 0);
}

bool attention_reads_bf16(const OpCall& call) {
  auto bf16 = [&](int i, int j) {  // inputs i and j both bfloat16
    return call.inputs[i]->dtype == REMAT_DTYPE_BF16 && call.inputs[j]->dtype == REMAT_DTYPE_BF16;
  };
  if (!bf16_gemm_avx512_available()) return false;
  if (call.code == static_cast<uint16_t>(OpCode::kAttention)) return bf16(0, 1);  // q, k
  if (call.code == static_cast<uint16_t>(OpCode::kAttentionGrad)) {
    return bf16(1, 2) || bf16(0, 3);  // q, k; dcontext, v
  }
  return false;
}

bool reads_16_bit_input(const OpCall& call, int i) {
  if (!is_half_float(call.inputs[i]->dtype)) return false;
  if (reads_16_bit_as_it_is(call.code, i, false)) return true;
  // Layer norm's x; its gradient's dy and x.
  const int rows_inputs = call.code == static_cast<uint16_t>(OpCode::kLayerNorm) ? 1 : 2;
  return i < rows_inputs && norm_rows_fit(call);
}

bool writes_16_bit_output(const OpCall& call, int o) {
  if (o != 0 || !is_half_float(call.outputs[0]->dtype)) return false;
  return reads_16_bit_as_it_is(call.code, o, true) || norm_rows_fit(call);
}

bool product_reads_16_bit(const OpCall& call) {
  const bool matmul = call.code == static_cast<uint16_t>(OpCode::kMatMul);
  if (!matmul && call.code != static_cast<uint16_t>(OpCode::kHeadMatMul)) return false;
  if (product_operand_dtype(call) == REMAT_DTYPE_F32) return false;
  for (int j = 2; j < call.num_inputs; ++j) {  // a bias: float32, and no operand
    if (call.inputs[j]->dtype != REMAT_DTYPE_F32) return false;
    if (same_tensor(*call.inputs[0], *call.inputs[j]) ||
        same_tensor(*call.inputs[1], *call.inputs[j]))
      return false;
  }
  // A 16-bit output of a reduce-mode sum would need its whole float32 sums (widened instead).
  return !(matmul && is_half_float(call.outputs[0]->dtype) &&
           matmul_shape(call).mode == MatmulMode::kReduce);
}

bool uses_strips(const OpCall& call) {
  if (product_reads_16_bit(call)) return is_half_float(call.outputs[0]->dtype);
  return norm_rows_fit(call) && runs_widened(call);
}

bool matmul_on_bf16_engine(const OpCall& call) {
  if (!bf16_gemm_available()) return false;
  if (call.code != static_cast<uint16_t>(OpCode::kMatMul)) return true;
  const MatmulShape shape = matmul_shape(call);
  return shape.mode != MatmulMode::kReduce || (shape.trans_a && !shape.trans_b) ||
         fattr(call, attr::matmul::alpha) == 1.0f;
}

remat_status run_widened(Kernel kernel, const KernelArgs& args, void* workspace) {
  const OpCall& call = *args.call;
  if (runs_per_element(call)) return run_per_element(kernel, args);
  if (product_reads_16_bit(call)) return run_product(kernel, args, workspace);
  const int64_t items = batch_chunk_items(call);
  if (items > 0) return run_in_batch_chunks(kernel, args, workspace, items);
  return run_widened_whole(kernel, args, workspace);
}

namespace {

// run_widened() of a whole call: every 16-bit tensor widened into its slice at once.
remat_status run_widened_whole(Kernel kernel, const KernelArgs& args, void* workspace) {
  const OpCall& call = *args.call;
  const WideningSlices s = cpu_slices(call);
  uint8_t* base = static_cast<uint8_t*>(workspace);
  // The call the kernel sees: the same op over float32 views of the 16-bit tensors.
  OpCallLists lists;
  OpCall wide = lists.adopt(call);
  TensorRef refs[kMaxWidenedTensors];
  KernelArgs w = args;
  w.call = &wide;
  bool converted[kMaxWidenedTensors] = {};
  const uint8_t product = product_operand_dtype(call);
  for (int i = 0; i < call.num_inputs; ++i) {
    const TensorRef& t = *call.inputs[i];
    const bool rounded = rounds_operand(call, i);
    if (reads_16_bit_input(call, i)) continue;  // the kernel reads it as it is
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
    if (t.dtype == REMAT_DTYPE_BF16) w.bf16_in[i] = static_cast<const uint16_t*>(args.in[i]);
  }
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (!is_half_float(t.dtype) || writes_16_bit_output(call, o)) continue;
    const int k = s.find(t);
    refs[kMaxOpInputs + o] = widened_ref(t);
    lists.out[o] = &refs[kMaxOpInputs + o];
    w.out[o] = base + s.offset[k];
  }
  const remat_status status = kernel(w);
  if (status != REMAT_OK) return status;
  for (int o = 0; o < call.num_outputs; ++o) {
    const TensorRef& t = *call.outputs[o];
    if (is_half_float(t.dtype) && !writes_16_bit_output(call, o)) {
      narrow(args, t.dtype, static_cast<const float*>(w.out[o]), args.out[o], t.numel);
    }
  }
  return REMAT_OK;
}

}  // namespace

}  // namespace cpu
}  // namespace remat
