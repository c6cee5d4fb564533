// The ONNX importer's multi-node patterns (onnx/importer.h): torch's exact GELU and its
// decomposed LayerNorm, each imported as one op.
#include <cmath>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {

// The exact GELU as torch exports it: x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5, each node the
// only reader of the one before. Imported as one gelu op.
bool OnnxImporter::gelu(const onnx::NodeProto& n) {
  float c = 0.0f;
  if (!scalar(n, 1, &c) || std::fabs(c - 1.41421356f) > 1e-5f || is_constant(n.input(0)))
    return false;
  const onnx::NodeProto* erf = sole_reader(n.output(0));
  if (erf == nullptr || erf->op_type() != "Erf") return false;
  const onnx::NodeProto* plus = sole_reader(erf->output(0));
  float one = 0.0f;
  if (plus == nullptr || plus->op_type() != "Add") return false;
  const int erf_side = plus->input(0) == erf->output(0) ? 0 : 1;
  if (!scalar(*plus, 1 - erf_side, &one) || one != 1.0f) return false;
  const onnx::NodeProto* times = sole_reader(plus->output(0));
  if (times == nullptr || times->op_type() != "Mul") return false;
  const std::string& other = times->input(0) == plus->output(0) ? times->input(1) : times->input(0);
  if (other != n.input(0)) return false;
  const onnx::NodeProto* half = sole_reader(times->output(0));
  float h = 0.0f;
  if (half == nullptr || half->op_type() != "Mul") return false;
  const int times_side = half->input(0) == times->output(0) ? 0 : 1;
  if (!scalar(*half, 1 - times_side, &h) || h != 0.5f) return false;
  const int x = tensor(n, 0);
  tensors_[half->output(0)] = b_.gelu(x, out_.graph.unique_name(half->output(0)));
  done_.insert({erf, plus, times, half});
  return true;
}

// nn.LayerNorm as torch exports it before opset 17: mean = ReduceMean(x), d = x - mean,
// var = ReduceMean(d ^ 2), y = d / Sqrt(var + eps) * weight + bias, over the last axis, each
// intermediate read only by the pattern. Imported as one layernorm op.
bool OnnxImporter::decomposed_layer_norm(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  auto last_axis = [&](const onnx::NodeProto& r) {
    const Dims axes = ints_attr(r, "axes", {});
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == static_cast<int64_t>(d.size()) - 1) &&
           int_attr(r, "keepdims", 1) == 1;
  };
  if (d.empty() || is_constant(n.input(0)) || !last_axis(n)) return false;
  const onnx::NodeProto* centre = sole_reader(n.output(0));
  if (centre == nullptr || centre->op_type() != "Sub" || centre->input(0) != n.input(0))
    return false;
  const auto readers = readers_.find(centre->output(0));
  if (readers == readers_.end() || readers->second.size() != 2) return false;
  const onnx::NodeProto* pow = nullptr;
  const onnx::NodeProto* divide = nullptr;
  for (int k : readers->second) {
    const onnx::NodeProto& r = model_.graph().node(k);
    if (r.op_type() == "Pow") pow = &r;
    if (r.op_type() == "Div" && r.input(0) == centre->output(0)) divide = &r;
  }
  float two = 0.0f, eps = 0.0f;
  if (pow == nullptr || divide == nullptr || pow->input(0) != centre->output(0) ||
      !scalar(*pow, 1, &two) || two != 2.0f) {
    return false;
  }
  const onnx::NodeProto* variance = sole_reader(pow->output(0));
  if (variance == nullptr || variance->op_type() != "ReduceMean" || !last_axis(*variance))
    return false;
  const onnx::NodeProto* plus = sole_reader(variance->output(0));
  if (plus == nullptr || plus->op_type() != "Add" || plus->input(0) != variance->output(0) ||
      !scalar(*plus, 1, &eps)) {
    return false;
  }
  const onnx::NodeProto* root = sole_reader(plus->output(0));
  if (root == nullptr || root->op_type() != "Sqrt" || divide->input(1) != root->output(0))
    return false;
  const onnx::NodeProto* times = sole_reader(divide->output(0));
  if (times == nullptr || times->op_type() != "Mul" || times->input(0) != divide->output(0))
    return false;
  const onnx::NodeProto* shift = sole_reader(times->output(0));
  if (shift == nullptr || shift->op_type() != "Add" || shift->input(0) != times->output(0))
    return false;
  const Dims h{d.back()};
  if (!is_constant(times->input(1)) || constants_.at(times->input(1)).dims != h ||
      !is_constant(shift->input(1)) || constants_.at(shift->input(1)).dims != h) {
    return false;
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(*times, 1, Role::kParam), beta = adopt(*shift, 1, Role::kParam);
  tensors_[shift->output(0)] =
      b_.layer_norm_with(x, gamma, beta, out_.graph.unique_name(shift->output(0)), eps);
  done_.insert({centre, pow, variance, plus, root, divide, times, shift});
  return true;
}

}  // namespace compiler
}  // namespace remat
