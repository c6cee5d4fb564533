// The activation-precision policy: which tensors of a graph a 16-bit plan stores in 16 bits.
#include "compiler/precision.h"

#include <algorithm>
#include <vector>

#include "plan/gpu_scratch.h"
#include "plan/head_matmul_shape.h"
#include "plan/matmul_shape.h"
#include "plan/op_attrs.h"
#include "plan/ops.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace compiler {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

bool parse_precision(const std::string& text, Precision* out) {
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    if (text == precision_name(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

remat_dtype activation_dtype(Precision precision) {
  switch (precision) {
    case Precision::kFp32: break;
    case Precision::kBf16: return REMAT_DTYPE_BF16;
    case Precision::kFp16: return REMAT_DTYPE_F16;
  }
  return REMAT_DTYPE_F32;
}

void apply_precision(Graph& graph, Precision precision) {
  const remat_dtype dtype = activation_dtype(precision);
  if (dtype == REMAT_DTYPE_F32) return;
  // The loss op's inputs stay float32: the logits or predictions it reads are small, and the
  // eval program hands the same tensor to the caller (remat_read_output reads float32).
  std::vector<bool> loss_input(graph.tensors.size(), false);
  for (const Op& op : graph.ops) {
    for (int out : op.outputs) {
      if (out != graph.loss) continue;
      for (int in : op.inputs) loss_input[static_cast<size_t>(in)] = true;
    }
  }
  for (const Op& op : graph.ops) {
    if (op.phase != Phase::kForward || op.outputs.empty()) continue;
    Tensor& y = graph.tensors[static_cast<size_t>(op.outputs[0])];
    if (y.role == Role::kActivation && y.dtype == REMAT_DTYPE_F32 &&
        !loss_input[static_cast<size_t>(op.outputs[0])]) {
      y.dtype = dtype;
    }
  }
}

namespace {

// backends/cpu/widening.h's runs_per_element() of |op|: computes_per_element(), one output, at most
// two inputs of the output's count, none of them the output.
bool runs_per_element(const Graph& graph, const Op& op) {
  if (!computes_per_element(static_cast<uint16_t>(op.code))) return false;
  if (op.outputs.size() != 1 || op.inputs.size() > 2) return false;
  const int64_t n = graph.tensors[static_cast<size_t>(op.outputs[0])].numel();
  for (int in : op.inputs) {
    if (in == op.outputs[0] || graph.tensors[static_cast<size_t>(in)].numel() != n) return false;
  }
  return true;
}

bool is_half(const Graph& graph, int t) {
  const uint8_t dtype = graph.tensors[static_cast<size_t>(t)].dtype;
  return dtype == REMAT_DTYPE_BF16 || dtype == REMAT_DTYPE_F16;
}

// backends/shared/batch_chunks.h's matmul_rows() of |op|.
MatmulRows matmul_rows(const Graph& graph, const Op& op) {
  if (op.code != OpCode::kMatMul) return MatmulRows::kWhole;
  const int a = op.inputs[0], b = op.inputs[1], c = op.outputs[0];
  const Tensor &ta = graph.tensors[static_cast<size_t>(a)],
               &tb = graph.tensors[static_cast<size_t>(b)],
               &tc = graph.tensors[static_cast<size_t>(c)];
  auto rows = [](const Tensor& t) { return t.shape.empty() ? int64_t{0} : t.shape[0]; };
  return remat::matmul_rows(static_cast<int>(ta.shape.size()), static_cast<int>(tb.shape.size()),
                            static_cast<int>(tc.shape.size()), rows(ta), rows(tb), rows(tc),
                            op.attr(attr::matmul::trans_a) != 0,
                            op.attr(attr::matmul::trans_b) != 0, tc.dtype == REMAT_DTYPE_F32,
                            op.inputs.size() > 2, a == b, c == a || c == b);
}

// Whether the batch chunks of |op| split its input (|output| false) or output |k| of rank |rank|:
// backends/shared/batch_chunks.h's splits_by_batch(), matmul_rows() first.
bool splits(const Graph& graph, const Op& op, size_t k, bool output, int rank) {
  const MatmulRows rows = matmul_rows(graph, op);
  if (rows != MatmulRows::kWhole) {
    if (output) return rows == MatmulRows::kRowsOfAAndC;
    return k == 0 || (k == 1 && rows == MatmulRows::kSumOverRows);
  }
  return splits_by_batch(static_cast<uint16_t>(op.code), static_cast<int>(k), output, rank);
}

// backends/cpu/widening.h's product_reads_16_bit() of |op| (a matmul or head_matmul with a 16-bit
// operand or output): its inputs past B float32 and neither operand, and no 16-bit output of a
// reduce-mode sum. Then the CPU holds a 16-bit copy (2 bytes an element, 64-byte rounded) of
// each operand of another dtype than the product's only, of a chunk's rows of those its row
// chunks split (product_chunk_rows, product_slice_bytes); returns those bytes in |bytes|.
bool product_reads_16_bit(const Graph& graph, const Op& op, uint64_t* bytes) {
  const bool matmul = op.code == OpCode::kMatMul;
  if (!matmul && op.code != OpCode::kHeadMatMul) return false;
  const int a = op.inputs[0], b = op.inputs[1], c = op.outputs[0];
  const int half = is_half(graph, a) ? a : is_half(graph, b) ? b : is_half(graph, c) ? c : -1;
  if (half < 0) return false;
  for (size_t j = 2; j < op.inputs.size(); ++j) {
    if (is_half(graph, op.inputs[j]) || op.inputs[j] == a || op.inputs[j] == b) return false;
  }
  if (matmul && is_half(graph, c)) {
    auto shape = [&](int t) -> const std::vector<int64_t>& {
      return graph.tensors[static_cast<size_t>(t)].shape;
    };
    auto numel = [&](int t) { return graph.tensors[static_cast<size_t>(t)].numel(); };
    const MatmulShape s =
        matmul_shape(shape(a).data(), static_cast<int>(shape(a).size()), numel(a), shape(b).data(),
                     static_cast<int>(shape(b).size()), numel(b), shape(c).data(),
                     static_cast<int>(shape(c).size()), numel(c), false, false);
    if (s.mode == MatmulMode::kReduce) return false;
  }
  const uint8_t product = graph.tensors[static_cast<size_t>(half)].dtype;
  const int operands = b == a ? 1 : 2;  // one copy of an operand that is A and B
  // The rows of the operands a product over rows splits, a chunk of which it rounds at a time
  // (all of them where they fit one chunk); any other product rounds its operands whole.
  const bool over_rows = matmul_rows(graph, op) != MatmulRows::kWhole;
  const int64_t rows = graph.tensors[static_cast<size_t>(a)].shape[0];
  auto split = [&](size_t i, const Tensor& t) {
    return over_rows && splits(graph, op, i, false, static_cast<int>(t.shape.size()));
  };
  uint64_t row_bytes = 0;
  for (size_t i = 0; i < static_cast<size_t>(operands); ++i) {
    const Tensor& t = graph.tensors[static_cast<size_t>(op.inputs[i])];
    if (t.dtype != product && split(i, t)) row_bytes += static_cast<uint64_t>(t.numel() / rows) * 4;
  }
  const int64_t items = row_bytes > 0 ? widening_chunk_items(row_bytes, rows) : rows;
  *bytes = 0;
  for (size_t i = 0; i < static_cast<size_t>(operands); ++i) {
    const Tensor& t = graph.tensors[static_cast<size_t>(op.inputs[i])];
    if (t.dtype == product) continue;
    const int64_t numel = split(i, t) ? t.numel() / rows * items : t.numel();
    *bytes += (static_cast<uint64_t>(numel) * 2 + 63) / 64 * 64;
  }
  return true;
}

// backends/shared/batch_chunks.h's sums_into_float32() of |op|: it sums_over_batch_items() into
// float32 outputs.
bool sums_into_float32(const Graph& graph, const Op& op) {
  if (!sums_over_batch_items(static_cast<uint16_t>(op.code))) return false;
  return std::all_of(op.outputs.begin(), op.outputs.end(), [&](int t) {
    return graph.tensors[static_cast<size_t>(t)].dtype == REMAT_DTYPE_F32;
  });
}

// backends/gpu/ops/widening.cc's computes_by_batch_item() of |op|: fused attention, the spatial
// ops and the softmax family (computes_per_batch_item), and the sums over the batch into float32;
// a head_matmul whose tensors' leading entries each hold one outer entry's heads; a matmul whose
// A is of rank 3 or more, in broadcast mode with B rank 2 and C of A's rank and leading dim, in
// batched mode with B and C of A's rank and leading dim, or in reduce mode with B of A's rank and
// leading dim into a float32 rank-2 C, without a bias; C neither A nor B; and a matmul over the
// rows of a rank-2 A (matmul_rows).
bool gpu_computes_by_batch_item(const Graph& graph, const Op& op) {
  if (computes_per_batch_item(static_cast<uint16_t>(op.code)) || sums_into_float32(graph, op))
    return true;
  if (op.code != OpCode::kMatMul && op.code != OpCode::kHeadMatMul) return false;
  const int a = op.inputs[0], b = op.inputs[1], c = op.outputs[0];
  const std::vector<int64_t>& sa = graph.tensors[static_cast<size_t>(a)].shape;
  const std::vector<int64_t>& sb = graph.tensors[static_cast<size_t>(b)].shape;
  const std::vector<int64_t>& sc = graph.tensors[static_cast<size_t>(c)].shape;
  const int ra = static_cast<int>(sa.size()), rb = static_cast<int>(sb.size()),
            rc = static_cast<int>(sc.size());
  auto numel = [&](int t) { return graph.tensors[static_cast<size_t>(t)].numel(); };
  if (matmul_rows(graph, op) != MatmulRows::kWhole) return true;
  if (c == a || c == b || ra < 3) return false;
  if (op.code == OpCode::kHeadMatMul) {
    const HeadMatmulShape s = head_matmul_shape(
        sa.data(), ra, numel(a), sb.data(), rb, numel(b), sc.data(), rc, numel(c),
        op.attr(attr::head_matmul::trans_a) != 0, op.attr(attr::head_matmul::trans_b) != 0,
        std::max<int64_t>(op.attr(attr::head_matmul::heads), 1),
        op.attr(attr::head_matmul::interleaved));
    return head_matmul_by_leading_entry(s, ra, rb, rc, sa[0], rb > 0 ? sb[0] : 0,
                                        rc > 0 ? sc[0] : 0);
  }
  const MatmulShape s = matmul_shape(sa.data(), ra, numel(a), sb.data(), rb, numel(b), sc.data(),
                                     rc, numel(c), false, false);
  if (s.mode == MatmulMode::kBroadcast) return rc == ra && rb == 2 && sa[0] == sc[0];
  if (s.mode == MatmulMode::kBatched)
    return rb == ra && rc == ra && sa[0] == sb[0] && sa[0] == sc[0];
  return s.mode == MatmulMode::kReduce && rb == ra && sa[0] == sb[0] && rc == 2 &&
         graph.tensors[static_cast<size_t>(c)].dtype == REMAT_DTYPE_F32 && op.inputs.size() == 2;
}

// backends/shared/widening_slices.h's matmul_operands_of_one_type() of |op| (CUDA's
// takes_half_operands): a matmul whose product is 16-bit (product_operand_dtype) and whose A and
// B are each of the product's type or float32. Then its 16-bit A and B get no slices.
bool gpu_reads_half_operands(const Graph& graph, const Op& op) {
  if (op.code != OpCode::kMatMul) return false;
  const int a = op.inputs[0], b = op.inputs[1], c = op.outputs[0];
  const int half = is_half(graph, a) ? a : is_half(graph, b) ? b : is_half(graph, c) ? c : -1;
  if (half < 0) return false;
  const uint8_t product = graph.tensors[static_cast<size_t>(half)].dtype;
  for (int t : {a, b}) {
    const uint8_t dtype = graph.tensors[static_cast<size_t>(t)].dtype;
    if (dtype != product && dtype != REMAT_DTYPE_F32) return false;
  }
  return true;
}

// backends/shared/widening_slices.h's moves_bytes() of |op|: it moves_elements() and all its
// tensors share one dtype.
bool moves_bytes(const Graph& graph, const Op& op) {
  if (!moves_elements(static_cast<uint16_t>(op.code)) || op.outputs.empty()) return false;
  const uint8_t dtype = graph.tensors[static_cast<size_t>(op.outputs[0])].dtype;
  auto same = [&](int t) { return graph.tensors[static_cast<size_t>(t)].dtype == dtype; };
  return std::all_of(op.inputs.begin(), op.inputs.end(), same) &&
         std::all_of(op.outputs.begin(), op.outputs.end(), same);
}

// backends/gpu/ops/ops.h's scratch_bytes() of |op|, by plan/gpu_scratch.h: fused attention's
// chunk of scores and a convolution's column matrices (for a chunk of |items| items of its batch
// where |items| > 0), the partial column sums of reduce_leading and of layer norm's gradient.
uint64_t gpu_scratch_bytes(const Graph& graph, const Op& op, int64_t items) {
  auto shape = [&](size_t i) -> const std::vector<int64_t>& {
    return graph.tensors[static_cast<size_t>(op.inputs[i])].shape;
  };
  switch (op.code) {
    case OpCode::kAttention:
      return gpu_attention_scratch_bytes(items > 0 ? items : shape(0)[0],
                                         op.attr(attr::attention::heads), shape(0)[1], shape(1)[1],
                                         1);
    case OpCode::kAttentionGrad:
      return gpu_attention_scratch_bytes(items > 0 ? items : shape(1)[0],
                                         op.attr(attr::attention_grad::heads), shape(1)[1],
                                         shape(2)[1], 2);
    case OpCode::kLayerNormGrad: {
      const int64_t n = shape(1).back();
      const int64_t rows = n > 0 ? graph.tensors[static_cast<size_t>(op.inputs[1])].numel() / n : 0;
      return gpu_column_sums_scratch_bytes(rows, n, 2);
    }
    case OpCode::kReduceLeading: {
      const int64_t columns = graph.tensors[static_cast<size_t>(op.outputs[0])].numel();
      const int64_t rows =
          columns > 0 ? graph.tensors[static_cast<size_t>(op.inputs[0])].numel() / columns : 0;
      return gpu_column_sums_scratch_bytes(rows, columns, 1);
    }
    case OpCode::kConv:
    case OpCode::kConvGradInput:
    case OpCode::kConvGradWeight: {
      // The images and the filters (conv: x, w; conv_grad_input: dx, w; conv_grad_weight: x, dw).
      auto dims = [&](int t) -> const std::vector<int64_t>& {
        return graph.tensors[static_cast<size_t>(t)].shape;
      };
      const std::vector<int64_t>& x = op.code == OpCode::kConvGradInput    ? dims(op.outputs[0])
                                      : op.code == OpCode::kConvGradWeight ? dims(op.inputs[1])
                                                                           : dims(op.inputs[0]);
      const std::vector<int64_t>& w =
          op.code == OpCode::kConvGradWeight ? dims(op.outputs[0]) : dims(op.inputs[1]);
      const ConvShape c =
          conv_shape(x.data(), w.data(), static_cast<int>(x.size()), conv_attrs(op.iattrs.data()));
      const int64_t image_floats = gpu_conv_image_floats(c, op.code == OpCode::kConvGradWeight);
      return gpu_conv_scratch_bytes(items > 0 ? items : c.x.n, image_floats);
    }
    default: return 0;
  }
}

}  // namespace

uint64_t op_workspace_bytes(const Graph& graph, const Op& op, WideningRule rule) {
  const bool in_chunks = rule == WideningRule::kCpu;
  const bool gpu = rule == WideningRule::kGpu || rule == WideningRule::kGpuHalfOperands;
  const uint16_t code = static_cast<uint16_t>(op.code);
  const uint64_t scratch = gpu ? gpu_scratch_bytes(graph, op, 0) : 0;
  if (op_info(code)->dtypes == OpDtypes::kAnyDtype || moves_bytes(graph, op)) return scratch;
  if (gpu && gpu_reads_16_bit(code)) return scratch;  // its 16-bit tensors as they are
  const bool half_operands =
      rule == WideningRule::kGpuHalfOperands && gpu_reads_half_operands(graph, op);
  if (in_chunks && runs_per_element(graph, op)) return 0;  // a chunk at a time on the stack
  uint64_t copies = 0;
  if (in_chunks && product_reads_16_bit(graph, op, &copies)) return copies;  // as they are
  std::vector<int> seen;
  std::vector<bool> split;  // seen[k] is split by batch chunks (plan/ops.h: splits_by_batch)
  // A product with a 16-bit A or B, or a 16-bit output, rounds a float32 operand in a slice
  // of its own too (backends/shared/widening_slices.h: product_operand_dtype, rounds_operand).
  const bool product = op.code == OpCode::kMatMul || op.code == OpCode::kHeadMatMul ||
                       op.code == OpCode::kConv || op.code == OpCode::kConvGradInput ||
                       op.code == OpCode::kConvGradWeight;
  const bool half_product = product && op.inputs.size() >= 2 &&
                            (is_half(graph, op.inputs[0]) || is_half(graph, op.inputs[1]) ||
                             (!op.outputs.empty() && is_half(graph, op.outputs[0])));
  auto splits = [&](int t, size_t k, bool output) {
    const int rank = static_cast<int>(graph.tensors[static_cast<size_t>(t)].shape.size());
    return compiler::splits(graph, op, k, output, rank);
  };
  auto add = [&](int t, size_t k, bool output, bool operand) {
    if (!is_half(graph, t) && !(operand && half_product)) return;
    const auto at = std::find(seen.begin(), seen.end(), t);
    if (at != seen.end()) {
      if (splits(t, k, output)) split[static_cast<size_t>(at - seen.begin())] = true;
      return;
    }
    seen.push_back(t);
    split.push_back(splits(t, k, output));
  };
  // Every backend reads and writes the tensors of plan/ops.h's reads_16_bit_as_it_is as they are
  // (backends/cpu/widening.h: reads_16_bit_input, writes_16_bit_output; backends/gpu/ops/
  // widening.cc: read_as_they_are), and the CPU layer norm's rows and its gradient's where
  // kNormRowSlots of them fit its strip.
  const bool norm = op.code == OpCode::kLayerNorm || op.code == OpCode::kLayerNormGrad;
  const size_t row_inputs = op.code == OpCode::kLayerNorm ? 1 : 2;
  const bool norm_rows =
      in_chunks && norm &&
      graph.tensors[static_cast<size_t>(op.inputs[row_inputs - 1])].shape.back() * kNormRowSlots <=
          kWideningStripFloats;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if ((in_chunks || gpu) && reads_16_bit_as_it_is(code, static_cast<int>(i), false)) continue;
    if (norm_rows && i < row_inputs) continue;
    if (half_operands && i < 2 && is_half(graph, op.inputs[i])) continue;
    add(op.inputs[i], i, false, i < 2);
  }
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    if (norm_rows && o == 0) continue;
    if ((in_chunks || gpu) && reads_16_bit_as_it_is(code, static_cast<int>(o), true)) continue;
    add(op.outputs[o], o, true, false);
  }
  // Fused attention, the per-image spatial ops and the sums over the batch into float32 widen a
  // chunk of their batch at a time (backends/cpu/widening.h: batch_chunk_items), and on the GPUs
  // so do broadcast products (backends/gpu/ops/widening.h: gpu_batch_chunk_items): their split
  // tensors take the chunk's items.
  int64_t batch = 1, items = 1;
  const bool batch_chunks =
      (in_chunks && (computes_per_batch_item(code) || sums_into_float32(graph, op))) ||
      (gpu && gpu_computes_by_batch_item(graph, op));
  if (batch_chunks && !seen.empty()) {
    // The leading dim of the first split output, else of the first split input, else of the
    // first input (batch_chunks.h).
    batch = 0;
    for (size_t o = 0; o < op.outputs.size() && batch == 0; ++o) {
      if (splits(op.outputs[o], o, true))
        batch = graph.tensors[static_cast<size_t>(op.outputs[o])].shape[0];
    }
    for (size_t i = 0; i < op.inputs.size() && batch == 0; ++i) {
      if (splits(op.inputs[i], i, false))
        batch = graph.tensors[static_cast<size_t>(op.inputs[i])].shape[0];
    }
    if (batch == 0) batch = graph.tensors[static_cast<size_t>(op.inputs[0])].shape[0];
    uint64_t item_bytes = 0;
    for (size_t k = 0; k < seen.size(); ++k) {
      const Tensor& x = graph.tensors[static_cast<size_t>(seen[k])];
      if (split[k]) item_bytes += static_cast<uint64_t>(x.numel() / batch) * 4;
    }
    items = widening_chunk_items(item_bytes, batch,
                                 in_chunks ? kWideningChunkBytes : kGpuWideningChunkBytes);
  }
  // The slices of a chunk of |count| items (|batch|: the whole call).
  auto slices = [&](int64_t count) {
    uint64_t bytes = 0;
    for (size_t k = 0; k < seen.size(); ++k) {
      const Tensor& x = graph.tensors[static_cast<size_t>(seen[k])];
      const int64_t numel = split[k] && count < batch ? x.numel() / batch * count : x.numel();
      bytes += (static_cast<uint64_t>(numel) * 4 + 63) / 64 * 64;
    }
    return bytes;
  };
  if (!gpu && items < batch && sums_into_float32(graph, op)) {
    // The CPU's chunks after the first write their sums past their slices, then add them.
    uint64_t sums = 0;
    for (int t : op.outputs)
      sums +=
          (static_cast<uint64_t>(graph.tensors[static_cast<size_t>(t)].numel()) * 4 + 63) / 64 * 64;
    return slices(items) + sums;
  }
  if (!gpu || items >= batch) return slices(items) + scratch;
  // The GPUs run each chunk with its own slices and scratch (backends/gpu/ops/widening.cc:
  // workspace_bytes): the first has the most slices, the last may hold more of attention's
  // scores (fewer items may chunk them by heads).
  const int64_t last = batch - (batch - 1) / items * items;
  return std::max(slices(items) + gpu_scratch_bytes(graph, op, items),
                  slices(last) + gpu_scratch_bytes(graph, op, last));
}

uint64_t workspace_bytes(const Graph& graph, WideningRule rule) {
  uint64_t most = 0;
  for (const Op& op : graph.ops) most = std::max(most, op_workspace_bytes(graph, op, rule));
  return most;
}

}  // namespace compiler
}  // namespace remat
