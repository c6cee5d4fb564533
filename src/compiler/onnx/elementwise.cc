// The ONNX importer's arithmetic (onnx/importer.h): Add, Sub, Mul and Div with ONNX's
// broadcasting, the unary math operators (Pow by a number, Sqrt, LeakyRelu, Erf, Clip,
// HardSigmoid, HardSwish, LogSoftmax, Cast) and the reductions ReduceSum and ReduceMean.
#include <cmath>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {
namespace {

// Whether |small| is |big|'s trailing dims (a bias_add's b).
bool trailing(const Dims& big, const Dims& small) {
  return !small.empty() && small.size() < big.size() &&
         std::equal(small.begin(), small.end(), big.end() - small.size());
}

}  // namespace

bool broadcast_shape(const Dims& a, const Dims& b, Dims* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    const int64_t y = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return false;
    (*out)[k] = x == 1 ? y : x;
  }
  return true;
}

int OnnxImporter::operand(const onnx::NodeProto& n, int input, bool trainable) {
  const std::string& name = n.input(input);
  if (!is_constant(name)) return tensor(n, input);
  const Constant& c = constants_.at(name);
  // A float initializer where a model learns (a bias added, a scale multiplied) trains.
  if (trainable && c.type == onnx::TensorProto_DataType_FLOAT && !c.initializer.empty() &&
      !c.dims.empty()) {
    return adopt(n, input, Role::kParam);
  }
  const auto known = constant_tensors_.find(name);
  if (known != constant_tensors_.end()) return known->second;
  // Any other constant is data the plan carries: a state tensor starting from its values.
  std::vector<float> values = c.f;
  if (c.type != onnx::TensorProto_DataType_FLOAT) values.assign(c.i.begin(), c.i.end());
  const Dims dims = c.dims.empty() ? Dims{1} : c.dims;
  const int t = carried(out_.graph.unique_name(name), REMAT_DTYPE_F32, dims, Role::kState,
                        values.data(), values.size() * sizeof(float));
  constant_tensors_[name] = t;
  return t;
}

int OnnxImporter::expand(int x, const Dims& target, const std::string& hint) {
  Dims cur = out_.graph.tensors[x].shape;
  if (product(cur) == product(target)) return x;  // the same elements in the same order
  cur.insert(cur.begin(), target.size() - std::min(target.size(), cur.size()), 1);
  int t = x;
  for (size_t k = 0; k < target.size();) {
    if (cur[k] != 1 || target[k] == 1) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < target.size() && cur[end] == 1 && target[end] != 1) ++end;
    for (size_t j = k; j < end; ++j) cur[j] = target[j];
    t = b_.broadcast(t, static_cast<int64_t>(k), static_cast<int64_t>(end - k), cur,
                     out_.graph.unique_name(hint));
    k = end;
  }
  return t;
}

void OnnxImporter::arithmetic(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Div" && gelu(n)) return;
  const std::string name = out_.graph.unique_name(n.output(0));
  const bool constant0 = is_constant(n.input(0)), constant1 = is_constant(n.input(1));
  float c = 0.0f;
  // A computed tensor times or over a constant number: scale.
  if ((op == "Mul" || op == "Div") && !constant0 && scalar(n, 1, &c) &&
      constant(n, 1).dims.size() <= shape_of(n.input(0)).size()) {
    if (op == "Div" && c == 0.0f) unsupported(n, "division by zero");
    const float alpha = op == "Mul" ? c : static_cast<float>(1.0 / static_cast<double>(c));
    return define(n, 0, scaled(tensor(n, 0), alpha, name));
  }
  if (op == "Mul" && constant0 && !constant1 && scalar(n, 0, &c) &&
      constant(n, 0).dims.size() <= shape_of(n.input(1)).size()) {
    return define(n, 0, scaled(tensor(n, 1), c, name));
  }
  const Dims a = shape_of(n.input(0)), b = shape_of(n.input(1));
  Dims out;
  if (!broadcast_shape(a, b, &out))
    unsupported(n, "shapes " + dims_text(a) + " and " + dims_text(b) + " do not broadcast");
  // Float initializers added or multiplied are parameters (a bias, a learned scale).
  const bool trainable = op == "Add" || op == "Mul";
  const int x = operand(n, 0, trainable), y = operand(n, 1, trainable);
  if (op == "Add") {
    // A bias of the other's trailing dims, on either side: bias_add.
    for (int side = 0; side < 2; ++side) {
      if ((side ? b : a) == out && trailing(out, side ? a : b)) {
        return define(n, 0, b_.bias_add(side ? y : x, side ? x : y, name));
      }
    }
  }
  const int xe = expand(x, out, name + ".expanded"), ye = expand(y, out, name + ".expanded");
  if (op == "Add") return define(n, 0, b_.add(xe, ye, name));
  if (op == "Sub")
    return define(n, 0, b_.add(xe, scaled(ye, -1.0f, name + ".negated"), name));  // a + (-1) b
  // Division by a computed tensor multiplies by its reciprocal (1/b is exact as torch's pow(b,
  // -1)).
  const int factor =
      op == "Div" ? b_.pow_scalar(ye, -1.0f, out_.graph.unique_name(name + ".reciprocal")) : ye;
  const int product_tensor = fresh(name, out);
  out_.graph.add_op(OpCode::kMul, {xe, factor}, {product_tensor});
  define(n, 0, product_tensor);
}

void OnnxImporter::math(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const std::string name = out_.graph.unique_name(n.output(0));
  if (op == "Cast") {
    const int64_t to = int_attr(n, "to", 0);
    if (is_boolean(n.input(0)) && to == onnx::TensorProto_DataType_BOOL)
      return boolean_view(n, shape_of(n.input(0)), false, false);
    if (is_boolean(n.input(0)) && to == onnx::TensorProto_DataType_FLOAT) return where(n);
    if (to != onnx::TensorProto_DataType_FLOAT ||
        out_.graph.tensors[tensor(n, 0)].dtype != REMAT_DTYPE_F32) {
      unsupported(n, "Cast of a computed tensor only from FLOAT to FLOAT (to " +
                         onnx::TensorProto_DataType_Name(static_cast<int32_t>(to)) +
                         "); remat's integer tensors are ids and labels");
    }
    return alias(n);
  }
  if (op == "LogSoftmax") {
    const Dims d = shape_of(n.input(0));
    const int64_t axis = int_attr(n, "axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(d.size()) - 1)
      unsupported(n, "log-softmax over an axis but the last");
    return define(n, 0, b_.log_softmax(tensor(n, 0), name));
  }
  if (op == "Pow") {
    float p = 0.0f;
    if (!scalar(n, 1, &p) || constant(n, 1).dims.size() > shape_of(n.input(0)).size()) {
      unsupported(n, "Pow by a constant number only");
    }
    return define(n, 0, b_.pow_scalar(tensor(n, 0), p, name));
  }
  const int x = tensor(n, 0);
  if (op == "Sqrt") return define(n, 0, b_.square_root(x, name));
  if (op == "Erf") return define(n, 0, b_.error_function(x, name));
  if (op == "Clip") {
    // Bounds from inputs 1 and 2 (constants, either may be absent) since opset 11, else from
    // the min and max attributes; none: no bound that side.
    float low = -3.402823466e38f, high = 3.402823466e38f;
    if (opset_ >= 11) {
      for (int k = 1; k <= 2; ++k) {
        if (k >= n.input_size() || n.input(k).empty()) continue;
        float v = 0.0f;
        if (!scalar(n, k, &v)) unsupported(n, "Clip's bounds must be constant numbers");
        (k == 1 ? low : high) = v;
      }
    } else {
      low = float_attr(n, "min", low);
      high = float_attr(n, "max", high);
    }
    if (!(low <= high)) unsupported(n, "Clip's min is above its max");
    return define(n, 0, b_.clip(x, low, high, name));
  }
  if (op == "HardSigmoid") {
    return define(
        n, 0, b_.hard_sigmoid(x, float_attr(n, "alpha", 0.2f), float_attr(n, "beta", 0.5f), name));
  }
  if (op == "HardSwish") {
    // x * HardSigmoid(x) with ONNX's alpha 1/6 and beta 0.5, as torch's hardswish.
    const int gate = b_.hard_sigmoid(x, 1.0f / 6.0f, 0.5f, out_.graph.unique_name(name + ".gate"));
    const int y = fresh(name, shape_of(n.input(0)));
    out_.graph.add_op(OpCode::kMul, {x, gate}, {y});
    return define(n, 0, y);
  }
  define(n, 0, b_.leaky_relu(x, float_attr(n, "alpha", 0.01f), name));  // LeakyRelu
}

void OnnxImporter::reduce(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "ReduceMean" && decomposed_layer_norm(n)) return;
  const Dims d = shape_of(n.input(0));
  const int64_t rank = static_cast<int64_t>(d.size());
  // ReduceSum reads its axes from input 1 since opset 13; ReduceMean from an attribute up to 17.
  Dims axes;
  if (op == "ReduceSum") {
    if (n.input_size() > 1 && !n.input(1).empty()) axes = int_constant(n, 1).i;
  } else {
    axes = ints_attr(n, "axes", {});
  }
  if (axes.empty() && int_attr(n, "noop_with_empty_axes", 0) != 0) {
    tensors_[n.output(0)] = tensor(n, 0);
    return;
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      unsupported(n, "axis " + std::to_string(a) + " outside the input's rank");
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  const bool keepdims = int_attr(n, "keepdims", 1) != 0;
  Dims out;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduced[static_cast<size_t>(k)])
      out.push_back(d[static_cast<size_t>(k)]);
    else if (keepdims)
      out.push_back(1);
  }
  if (out.empty()) out = {1};  // a scalar is held as [1]
  // Each run of consecutive axes is one reduce_sum, the innermost first so that the axes before
  // it keep their numbers; a mean of means over the runs is the mean over all of them.
  int t = tensor(n, 0);
  Dims cur = d;
  for (int64_t end = rank; end > 0;) {
    if (!reduced[static_cast<size_t>(end - 1)]) {
      --end;
      continue;
    }
    int64_t begin = end - 1;
    while (begin > 0 && reduced[static_cast<size_t>(begin - 1)]) --begin;
    cur.erase(cur.begin() + begin, cur.begin() + end);
    bool last = true;
    for (int64_t k = 0; k < begin; ++k) last = last && !reduced[static_cast<size_t>(k)];
    const Dims shape = last ? out : (cur.empty() ? Dims{1} : cur);
    t = b_.reduce_sum(t, begin, end - begin, op == "ReduceMean", shape,
                      out_.graph.unique_name(n.output(0)));
    end = begin;
  }
  define(n, 0, t);
}

}  // namespace compiler
}  // namespace remat
