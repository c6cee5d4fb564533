// Graph IR construction with every op checked as it is added.
#include "compiler/graph.h"

#include "plan/head_matmul_shape.h"
#include "plan/op_check.h"

namespace remat {
namespace compiler {

namespace {

// A list of |values|' size with each value at its attribute's index: every index below the
// size, each once, or the list is not the op's whole list.
template <typename Attr, typename T>
std::vector<T> by_index(std::initializer_list<std::pair<Attr, T>> values) {
  std::vector<T> list(values.size(), T{});
  std::vector<bool> given(values.size(), false);
  for (const std::pair<Attr, T>& v : values) {
    if (v.first.index >= list.size() || given[v.first.index]) {
      throw std::invalid_argument(
          "named attributes: each of an op's attributes must be given once");
    }
    given[v.first.index] = true;
    list[v.first.index] = v.second;
  }
  return list;
}

}  // namespace

std::vector<int64_t> named(std::initializer_list<std::pair<IntAttr, int64_t>> values) {
  return by_index(values);
}

std::vector<float> named(std::initializer_list<std::pair<FloatAttr, float>> values) {
  return by_index(values);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t Tensor::bytes() const {
  const uint64_t item = (dtype == REMAT_DTYPE_F16 || dtype == REMAT_DTYPE_BF16) ? 2
                        : dtype == REMAT_DTYPE_I64                              ? 8
                                                                                : 4;
  return static_cast<uint64_t>(numel()) * item;
}

int Graph::add_tensor(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape,
                      Role role, Init init, float init_scale) {
  if (names_.count(name) != 0) throw CompileError("tensor name '" + name + "' is used twice");
  if (shape.empty() || shape.size() > REMAT_MAX_RANK) {
    throw CompileError("tensor '" + name + "' has rank " + std::to_string(shape.size()) +
                       ", expected 1.." + std::to_string(REMAT_MAX_RANK));
  }
  for (int64_t d : shape) {
    if (d < 1) throw CompileError("tensor '" + name + "' has dim " + std::to_string(d));
  }
  if (tensors.size() >= kMaxGraphTensors) {
    throw CompileError("tensor '" + name + "' would be tensor " +
                       std::to_string(tensors.size() + 1) + ": a graph holds at most " +
                       std::to_string(kMaxGraphTensors) + " tensors (use fewer layers)");
  }
  const int index = static_cast<int>(tensors.size());
  tensors.push_back(Tensor{name, dtype, std::move(shape), role, init, init_scale, false, {}});
  names_.emplace(name, index);
  return index;
}

int Graph::find(const std::string& name) const {
  auto at = names_.find(name);
  return at == names_.end() ? -1 : at->second;
}

std::string Graph::unique_name(const std::string& hint) const {
  std::string name = hint;
  for (int n = 1; find(name) >= 0; ++n) name = hint + "#" + std::to_string(n);
  return name;
}

int Graph::add_op(OpCode code, std::vector<int> inputs, std::vector<int> outputs,
                  std::vector<int64_t> iattrs, std::vector<float> fattrs, Phase phase, int source) {
  ShapeView in[8], out[8];
  if (inputs.size() > 8 || outputs.size() > 8) throw CompileError("op with too many tensors");
  if (ops.size() >= kMaxGraphOps) {
    throw CompileError(std::string(op_name(static_cast<uint16_t>(code))) + " would be op " +
                       std::to_string(ops.size() + 1) + ": a graph holds at most " +
                       std::to_string(kMaxGraphOps) + " ops (use fewer layers)");
  }
  auto view = [&](int t) {
    if (t < 0 || t >= static_cast<int>(tensors.size())) {
      throw CompileError(std::string(op_name(static_cast<uint16_t>(code))) + ": tensor index " +
                         std::to_string(t) + " does not exist");
    }
    const Tensor& x = tensors[t];
    return ShapeView{static_cast<uint8_t>(x.dtype), static_cast<uint8_t>(x.shape.size()),
                     x.shape.data()};
  };
  for (size_t i = 0; i < inputs.size(); ++i) in[i] = view(inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) out[i] = view(outputs[i]);
  char message[512];
  const remat_status status = check_op(
      static_cast<uint16_t>(code), in, static_cast<uint32_t>(inputs.size()), out,
      static_cast<uint32_t>(outputs.size()), iattrs.data(), static_cast<uint32_t>(iattrs.size()),
      fattrs.data(), static_cast<uint32_t>(fattrs.size()), message, sizeof(message));
  if (status != REMAT_OK) {
    std::string names;
    for (int t : outputs) names += (names.empty() ? "" : ", ") + tensors[t].name;
    throw CompileError(std::string(message) + " (building '" + names + "')");
  }
  const int index = static_cast<int>(ops.size());
  ops.push_back(Op{code, std::move(inputs), std::move(outputs), std::move(iattrs),
                   std::move(fattrs), phase, source < 0 ? index : source, 0.0});
  ops.back().flops = estimate_flops(*this, ops.back());
  return index;
}

double estimate_flops(const Graph& graph, const Op& op) {
  auto numel = [&](int t) { return static_cast<double>(graph.tensors[t].numel()); };
  switch (op.code) {
    case OpCode::kMatMul: {
      // 2*M*N*K per matrix, times the larger batch (the reduce mode sums over A's batch).
      const Tensor& a = graph.tensors[op.inputs[0]];
      const Tensor& c = graph.tensors[op.outputs[0]];
      const size_t ra = a.shape.size(), rc = c.shape.size();
      const double k =
          static_cast<double>(op.attr(attr::matmul::trans_a) ? a.shape[ra - 2] : a.shape[ra - 1]);
      const double mn = static_cast<double>(c.shape[rc - 2] * c.shape[rc - 1]);
      const double batch_a =
          numel(op.inputs[0]) / static_cast<double>(a.shape[ra - 2] * a.shape[ra - 1]);
      const double batch_c = numel(op.outputs[0]) / mn;
      return 2.0 * mn * k * (batch_a > batch_c ? batch_a : batch_c);
    }
    case OpCode::kHeadMatMul: {
      // 2*M*N*K per product.
      const Tensor& a = graph.tensors[op.inputs[0]];
      const Tensor& b = graph.tensors[op.inputs[1]];
      const Tensor& c = graph.tensors[op.outputs[0]];
      const HeadMatmulShape s = head_matmul_shape(
          a.shape.data(), static_cast<int>(a.shape.size()), a.numel(), b.shape.data(),
          static_cast<int>(b.shape.size()), b.numel(), c.shape.data(),
          static_cast<int>(c.shape.size()), c.numel(), op.attr(attr::head_matmul::trans_a) != 0,
          op.attr(attr::head_matmul::trans_b) != 0, op.attr(attr::head_matmul::heads),
          op.attr(attr::head_matmul::interleaved));
      return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
             static_cast<double>(s.c.products);
    }
    case OpCode::kAttention:
    case OpCode::kAttentionGrad: {
      // Per batch, head, query and key: q.k (2 D), the softmax (8), p.v (2 Dv); the gradient
      // also recomputes q.k and forms dp (2 Dv), dv (2 Dv), dq (2 D) and dk (2 D).
      const bool grad = op.code == OpCode::kAttentionGrad;
      const Tensor& q = graph.tensors[op.inputs[grad ? 1 : 0]];
      const Tensor& k = graph.tensors[op.inputs[grad ? 2 : 1]];
      const Tensor& v = graph.tensors[op.inputs[grad ? 3 : 2]];
      const double pairs = static_cast<double>(q.shape[0] * q.shape[1]) *
                           static_cast<double>(k.shape[1]);  // B * Sq * Sk, times heads below
      const double d = static_cast<double>(q.shape[2]), dv = static_cast<double>(v.shape[2]);
      const double heads = static_cast<double>(op.attr(attr::attention::heads));
      // Per head: D = d / heads; summed over the heads, the products cost pairs * (2 d + 2 dv).
      return grad ? pairs * (6.0 * d + 4.0 * dv + 8.0 * heads)
                  : pairs * (2.0 * d + 2.0 * dv + 8.0 * heads);
    }
    case OpCode::kConv:
    case OpCode::kConvGradInput:
    case OpCode::kConvGradWeight: {
      // 2 multiply-adds per output element and filter tap: 2 * N*K*P*Q * C/groups*R*S.
      const int w = op.code == OpCode::kConvGradWeight ? op.outputs[0] : op.inputs[1];
      const int y = op.code == OpCode::kConv ? op.outputs[0] : op.inputs[0];
      const Tensor& filters = graph.tensors[w];
      return 2.0 * numel(y) * numel(w) / static_cast<double>(filters.shape[0]);
    }
    case OpCode::kBatchNorm:
    case OpCode::kBatchNormGrad:
    case OpCode::kLayerNorm:
    case OpCode::kLayerNormGrad:
    case OpCode::kSoftmax:
    case OpCode::kSoftmaxGrad:
    case OpCode::kGelu:
    case OpCode::kGeluGrad: return 8.0 * numel(op.inputs[0]);
    case OpCode::kAdamUpdate: return 12.0 * numel(op.inputs[0]);
    default: return op.inputs.empty() ? 0.0 : numel(op.inputs[0]);
  }
}

}  // namespace compiler
}  // namespace remat
