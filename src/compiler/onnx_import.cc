// The ONNX importer of onnx_import.h, over Debian's libonnx (ModelProto, the checker).
#include "compiler/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "compiler/builder.h"

namespace remat {
namespace compiler {
namespace {

using Dims = std::vector<int64_t>;

// Opsets whose operators the importer was written against.
constexpr int64_t kOldestOpset = 13;
constexpr int64_t kNewestOpset = 17;

std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

int64_t product(const Dims& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t n = 1;
  for (size_t i = from; i < d.size() && i < to; ++i) n *= d[i];
  return n;
}

// A value known when compiling: an initializer, a Constant, or shape arithmetic on them.
struct Constant {
  int32_t type = 0;  // onnx::TensorProto_DataType
  Dims dims;
  std::vector<float> f;      // FLOAT
  std::vector<int64_t> i;    // INT64 and INT32, widened
  std::string initializer;   // the initializer's name, when it is one
  int64_t numel() const { return product(dims); }
};

// The elements of |t| (raw_data or the typed field); throws for other types and external data.
Constant decode(const onnx::TensorProto& t, const std::string& what) {
  Constant c;
  c.type = t.data_type();
  c.dims.assign(t.dims().begin(), t.dims().end());
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    throw CompileError(what + " '" + t.name() + "' keeps its data in an external file, which remat does not read");
  }
  const int64_t n = c.numel();
  const std::string& raw = t.raw_data();
  auto take = [&](size_t item, const char* type) {
    if (!raw.empty() && raw.size() != static_cast<size_t>(n) * item) {
      throw CompileError(what + " '" + t.name() + "': " + std::to_string(raw.size()) + " bytes of " + type +
                         " data for " + std::to_string(n) + " elements");
    }
    return !raw.empty();
  };
  switch (c.type) {
    case onnx::TensorProto_DataType_FLOAT:
      c.f.resize(static_cast<size_t>(n));
      if (take(4, "float")) {
        std::memcpy(c.f.data(), raw.data(), raw.size());
      } else if (t.float_data_size() == n) {
        c.f.assign(t.float_data().begin(), t.float_data().end());
      } else {
        throw CompileError(what + " '" + t.name() + "': " + std::to_string(t.float_data_size()) + " floats for " +
                           std::to_string(n) + " elements");
      }
      break;
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_INT32: {
      const bool wide = c.type == onnx::TensorProto_DataType_INT64;
      c.i.resize(static_cast<size_t>(n));
      if (take(wide ? 8 : 4, wide ? "int64" : "int32")) {
        for (int64_t k = 0; k < n; ++k) {
          if (wide) {
            std::memcpy(&c.i[k], raw.data() + 8 * k, 8);
          } else {
            int32_t v;
            std::memcpy(&v, raw.data() + 4 * k, 4);
            c.i[k] = v;
          }
        }
      } else if (wide && t.int64_data_size() == n) {
        c.i.assign(t.int64_data().begin(), t.int64_data().end());
      } else if (!wide && t.int32_data_size() == n) {
        c.i.assign(t.int32_data().begin(), t.int32_data().end());
      } else {
        throw CompileError(what + " '" + t.name() + "': its element count does not match its dims " + dims_text(c.dims));
      }
      c.type = onnx::TensorProto_DataType_INT64;
      break;
    }
    default:
      throw CompileError(what + " '" + t.name() + "' has element type " + onnx::TensorProto_DataType_Name(c.type) +
                         " (remat reads FLOAT, INT64 and INT32 constants)");
  }
  return c;
}

// Imports one graph, node by node in the file's (topological) order.
class Importer {
 public:
  Importer(const onnx::ModelProto& model, const std::string& path, int64_t batch, int64_t opset)
      : model_(model), path_(path), batch_(batch), opset_(opset), b_(&out_.graph) {}

  OnnxImport run(OnnxLoss loss);

 private:
  // ---- values ------------------------------------------------------------------------------
  bool is_constant(const std::string& name) const { return constants_.count(name) != 0; }
  const Constant& constant(const onnx::NodeProto& n, int input) const;
  int tensor(const onnx::NodeProto& n, int input);
  Dims shape_of(const std::string& name) const;
  // A parameter (or state) tensor from initializer |c| of |n|'s input |input|, made once.
  int adopt(const onnx::NodeProto& n, int input, Role role);
  void define(const onnx::NodeProto& n, int output, int tensor, Dims logical = {});
  void define_constant(const onnx::NodeProto& n, int output, Constant c);

  // ---- nodes -------------------------------------------------------------------------------
  void node(const onnx::NodeProto& n);
  void fold(const onnx::NodeProto& n);
  void gemm(const onnx::NodeProto& n);
  void matmul(const onnx::NodeProto& n);
  void add(const onnx::NodeProto& n);
  void conv(const onnx::NodeProto& n);
  void batch_norm(const onnx::NodeProto& n);
  void pool(const onnx::NodeProto& n);
  void reshape(const onnx::NodeProto& n, const Dims& target);
  void concat(const onnx::NodeProto& n);
  void pad(const onnx::NodeProto& n);
  void dropout(const onnx::NodeProto& n);
  void attach_loss(OnnxLoss loss);

  // ---- attributes and messages -------------------------------------------------------------
  const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name) const;
  int64_t int_attr(const onnx::NodeProto& n, const char* name, int64_t fallback) const;
  float float_attr(const onnx::NodeProto& n, const char* name, float fallback) const;
  Dims ints_attr(const onnx::NodeProto& n, const char* name, Dims fallback) const;
  std::string name_of(const onnx::NodeProto& n) const;
  [[noreturn]] void unsupported(const onnx::NodeProto& n, const std::string& why) const;

  const onnx::ModelProto& model_;
  std::string path_;
  int64_t batch_, opset_;
  OnnxImport out_;
  Builder b_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, int> tensors_;      // ONNX value -> graph tensor
  std::map<std::string, Dims> logical_;     // ONNX shape where it differs from the tensor's
  std::map<std::string, int> adopted_;      // initializer -> graph tensor
};

const Constant& Importer::constant(const onnx::NodeProto& n, int input) const {
  const auto it = input < n.input_size() ? constants_.find(n.input(input)) : constants_.end();
  if (it == constants_.end()) unsupported(n, "input " + std::to_string(input) + " must be a constant (an initializer)");
  return it->second;
}

int Importer::tensor(const onnx::NodeProto& n, int input) {
  if (input >= n.input_size() || n.input(input).empty()) unsupported(n, "input " + std::to_string(input) + " is missing");
  const std::string& name = n.input(input);
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    if (is_constant(name)) unsupported(n, "input '" + name + "' is a constant where remat needs a computed tensor");
    unsupported(n, "input '" + name + "' is produced by no node before it");
  }
  const auto view = logical_.find(name);
  if (view == logical_.end() || view->second == out_.graph.tensors[it->second].shape) return it->second;
  // A value held with fewer dims than ONNX gives it (global average pooling's [N, C] for [N, C,
  // 1, 1]): a node that reads it whole gets a copy of the ONNX shape.
  const int copy = out_.graph.add_tensor(out_.graph.unique_name(name), REMAT_DTYPE_F32, view->second, Role::kActivation);
  out_.graph.add_op(OpCode::kCopy, {it->second}, {copy});
  tensors_[name] = copy;
  logical_.erase(view);
  return copy;
}

Dims Importer::shape_of(const std::string& name) const {
  const auto view = logical_.find(name);
  if (view != logical_.end()) return view->second;
  const auto it = tensors_.find(name);
  if (it != tensors_.end()) return out_.graph.tensors[it->second].shape;
  const auto c = constants_.find(name);
  return c != constants_.end() ? c->second.dims : Dims{};
}

int Importer::adopt(const onnx::NodeProto& n, int input, Role role) {
  const Constant& c = constant(n, input);
  const std::string& name = n.input(input);
  if (c.type != onnx::TensorProto_DataType_FLOAT || c.initializer.empty()) {
    unsupported(n, "input '" + name + "' must be a float initializer (a parameter)");
  }
  const auto it = adopted_.find(name);
  if (it != adopted_.end()) return it->second;
  if (c.dims.empty()) unsupported(n, "parameter '" + name + "' is a scalar; remat parameters have at least one dim");
  const int t = out_.graph.add_tensor(name, REMAT_DTYPE_F32, c.dims, role, Init::kData);
  std::vector<uint8_t>& data = out_.graph.tensors[t].init_data;
  data.resize(c.f.size() * sizeof(float));
  std::memcpy(data.data(), c.f.data(), data.size());
  if (role == Role::kParam) out_.graph.params.push_back(t);
  adopted_[name] = t;
  // torch.onnx.export names initializers after the state_dict, except those it made itself (a
  // transposed MatMul weight, a batch norm folded into a convolution): "onnx::MatMul_123".
  if (name.compare(0, 6, "onnx::") == 0) {
    out_.warnings.push_back("parameter '" + name + "' (" + n.op_type() + " node " + name_of(n) +
                            ") has no state_dict name: the export renamed or folded it, so --load-params must "
                            "give it under this name");
  }
  return t;
}

void Importer::define(const onnx::NodeProto& n, int output, int tensor, Dims logical) {
  const std::string& name = n.output(output);
  tensors_[name] = tensor;
  if (!logical.empty()) logical_[name] = logical;
}

void Importer::define_constant(const onnx::NodeProto& n, int output, Constant c) {
  c.initializer.clear();
  constants_[n.output(output)] = std::move(c);
}

const onnx::AttributeProto* Importer::attribute(const onnx::NodeProto& n, const char* name) const {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t Importer::int_attr(const onnx::NodeProto& n, const char* name, int64_t fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? a->i() : fallback;
}

float Importer::float_attr(const onnx::NodeProto& n, const char* name, float fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? a->f() : fallback;
}

Dims Importer::ints_attr(const onnx::NodeProto& n, const char* name, Dims fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? Dims(a->ints().begin(), a->ints().end()) : fallback;
}

std::string Importer::name_of(const onnx::NodeProto& n) const {
  return "'" + (n.name().empty() ? n.output_size() > 0 ? n.output(0) : std::string("?") : n.name()) + "'";
}

void Importer::unsupported(const onnx::NodeProto& n, const std::string& why) const {
  std::string inputs;
  for (int k = 0; k < n.input_size(); ++k) {
    inputs += (k ? ", " : "") + (n.input(k).empty() ? std::string("(none)") : n.input(k) + " " + dims_text(shape_of(n.input(k))));
  }
  throw CompileError(path_ + ": node " + name_of(n) + " (" + n.op_type() + ", opset " + std::to_string(opset_) +
                     ") with inputs " + inputs + ": " + why);
}

// ---- nodes ---------------------------------------------------------------------------------

void Importer::node(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") unsupported(n, "domain '" + n.domain() + "' is not ONNX's");
  const std::string& op = n.op_type();
  bool all_constant = n.input_size() > 0;
  for (const std::string& in : n.input()) all_constant &= in.empty() || is_constant(in);
  if (op == "Constant" || op == "Shape" || (all_constant && op != "Dropout")) return fold(n);
  if (op == "Gemm") return gemm(n);
  if (op == "MatMul") return matmul(n);
  if (op == "Add") return add(n);
  if (op == "Conv") return conv(n);
  if (op == "BatchNormalization") return batch_norm(n);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") return pool(n);
  if (op == "Concat") return concat(n);
  if (op == "Pad") return pad(n);
  if (op == "Dropout") return dropout(n);
  if (op == "Identity") {  // the same tensor under another name
    tensor(n, 0);  // names what is wrong
    tensors_[n.output(0)] = tensors_[n.input(0)];
    if (logical_.count(n.input(0))) logical_[n.output(0)] = logical_[n.input(0)];
    return;
  }
  if (op == "Relu" || op == "Tanh" || op == "Sigmoid") {
    const int x = tensor(n, 0);
    const std::string name = out_.graph.unique_name(n.output(0));
    return define(n, 0, op == "Relu" ? b_.relu(x, name) : op == "Tanh" ? b_.tanh(x, name) : b_.sigmoid(x, name));
  }
  if (op == "Softmax") {
    const Dims d = shape_of(n.input(0));
    const int64_t axis = int_attr(n, "axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(d.size()) - 1) unsupported(n, "softmax over an axis but the last");
    return define(n, 0, b_.softmax(tensor(n, 0), out_.graph.unique_name(n.output(0))));
  }
  if (op == "Flatten") {
    const Dims d = shape_of(n.input(0));
    int64_t axis = int_attr(n, "axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(d.size());
    if (axis < 0 || axis > static_cast<int64_t>(d.size())) unsupported(n, "axis outside the input's rank");
    return reshape(n, {product(d, 0, static_cast<size_t>(axis)), product(d, static_cast<size_t>(axis))});
  }
  if (op == "Reshape") {
    const Constant& target = constant(n, 1);
    const Dims d = shape_of(n.input(0));
    Dims out(target.i.begin(), target.i.end());
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == 0 && int_attr(n, "allowzero", 0) == 0) {
        if (k >= d.size()) unsupported(n, "a 0 in the target shape past the input's rank");
        out[k] = d[k];
      }
      if (out[k] == -1) {
        if (infer >= 0) unsupported(n, "two -1 in the target shape");
        infer = static_cast<int64_t>(k);
      } else {
        known *= out[k];
      }
    }
    if (infer >= 0) out[static_cast<size_t>(infer)] = known > 0 ? product(d) / known : 0;
    if (product(out) != product(d)) unsupported(n, "target shape " + dims_text(out) + " holds another element count");
    return reshape(n, out);
  }
  unsupported(n, "remat does not import this op (docs/onnx.md lists what it does)");
}

// Shape arithmetic and constants: evaluated here, never in the plan.
void Importer::fold(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Constant") {
    const onnx::AttributeProto* v = attribute(n, "value");
    if (v == nullptr || !v->has_t()) unsupported(n, "only a Constant with a tensor 'value' is read");
    return define_constant(n, 0, decode(v->t(), "constant"));
  }
  if (op == "Shape") {
    Constant c;
    c.type = onnx::TensorProto_DataType_INT64;
    c.i = shape_of(n.input(0));
    if (c.i.empty()) unsupported(n, "the input's shape is not known");
    c.dims = {static_cast<int64_t>(c.i.size())};
    return define_constant(n, 0, c);
  }
  if (op == "Identity" || op == "Cast") {
    Constant c = constant(n, 0);
    if (op == "Cast") {
      const int64_t to = int_attr(n, "to", 0);
      if (to == onnx::TensorProto_DataType_FLOAT && c.type == onnx::TensorProto_DataType_INT64) {
        c.f.assign(c.i.begin(), c.i.end());
        c.i.clear();
      } else if (to == onnx::TensorProto_DataType_INT64 && c.type == onnx::TensorProto_DataType_FLOAT) {
        c.i.assign(c.f.begin(), c.f.end());
        c.f.clear();
      } else if (to != c.type) {
        unsupported(n, "a cast of a constant to type " + std::to_string(to));
      }
      c.type = static_cast<int32_t>(to);
    }
    return define_constant(n, 0, c);
  }
  // The rest act on 1-D int64 constants (shapes and indices).
  auto ints = [&](int input) -> const Constant& {
    const Constant& c = constant(n, input);
    if (c.type != onnx::TensorProto_DataType_INT64 || c.dims.size() > 1) {
      unsupported(n, "remat folds this op on int64 scalars and vectors only (shape arithmetic)");
    }
    return c;
  };
  Constant out;
  out.type = onnx::TensorProto_DataType_INT64;
  if (op == "Gather") {
    const Constant& data = ints(0);
    const Constant& index = ints(1);
    if (int_attr(n, "axis", 0) != 0) unsupported(n, "a folded Gather takes axis 0");
    for (int64_t k : index.i) {
      const int64_t at = k < 0 ? k + data.numel() : k;
      if (at < 0 || at >= data.numel()) unsupported(n, "index " + std::to_string(k) + " outside the data");
      out.i.push_back(data.i[static_cast<size_t>(at)]);
    }
    out.dims = index.dims;
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    out = ints(0);
    out.dims = {out.numel()};
    if (op == "Squeeze" && out.numel() == 1) out.dims.clear();
  } else if (op == "Concat") {
    for (int k = 0; k < n.input_size(); ++k) {
      const Constant& part = ints(k);
      out.i.insert(out.i.end(), part.i.begin(), part.i.end());
    }
    out.dims = {static_cast<int64_t>(out.i.size())};
  } else {
    unsupported(n, "remat does not fold this op on constants");
  }
  define_constant(n, 0, out);
}

void Importer::gemm(const onnx::NodeProto& n) {
  const Dims a = shape_of(n.input(0));
  if (a.size() != 2 || int_attr(n, "transA", 0) != 0) unsupported(n, "Gemm takes a 2-D A, not transposed");
  const bool trans_b = int_attr(n, "transB", 0) != 0;
  const int x = tensor(n, 0);
  const int w = adopt(n, 1, Role::kParam);
  const Dims wd = out_.graph.tensors[w].shape;
  if (wd.size() != 2 || wd[trans_b ? 1 : 0] != a[1]) unsupported(n, "B does not match A's columns");
  const std::string name = out_.graph.unique_name(n.output(0));
  int y = b_.matmul(x, w, false, trans_b, float_attr(n, "alpha", 1.0f), {a[0], wd[trans_b ? 0 : 1]}, name);
  if (n.input_size() > 2 && !n.input(2).empty()) {
    if (float_attr(n, "beta", 1.0f) != 1.0f) unsupported(n, "beta other than 1");
    const int bias = adopt(n, 2, Role::kParam);
    if (out_.graph.tensors[bias].shape != Dims{wd[trans_b ? 0 : 1]}) unsupported(n, "C must be a bias [N]");
    y = b_.bias_add(y, bias, out_.graph.unique_name(n.output(0) + ".bias"));
  }
  define(n, 0, y);
}

void Importer::matmul(const onnx::NodeProto& n) {
  const Dims a = shape_of(n.input(0));
  if (!is_constant(n.input(1)) || a.size() < 2) unsupported(n, "MatMul of a tensor by a 2-D parameter only");
  const int x = tensor(n, 0);
  const int w = adopt(n, 1, Role::kParam);
  const Dims wd = out_.graph.tensors[w].shape;
  if (wd.size() != 2 || wd[0] != a.back()) unsupported(n, "B must be a 2-D parameter [K, N] matching A's last dim");
  Dims out = a;
  out.back() = wd[1];
  define(n, 0, b_.matmul(x, w, false, false, 1.0f, out, out_.graph.unique_name(n.output(0))));
}

void Importer::add(const onnx::NodeProto& n) {
  // A bias: a tensor plus a 1-D float initializer along its last axis (either order).
  for (int side = 0; side < 2; ++side) {
    if (!is_constant(n.input(side)) || is_constant(n.input(1 - side))) continue;
    const Dims d = shape_of(n.input(1 - side));
    if (constant(n, side).dims != Dims{d.back()}) unsupported(n, "a constant added must be a bias along the last axis");
    const int x = tensor(n, 1 - side);
    return define(n, 0, b_.bias_add(x, adopt(n, side, Role::kParam), out_.graph.unique_name(n.output(0))));
  }
  if (shape_of(n.input(0)) != shape_of(n.input(1))) unsupported(n, "Add of tensors of different shapes (broadcasting)");
  const int x = tensor(n, 0), y = tensor(n, 1);
  define(n, 0, b_.add(x, y, out_.graph.unique_name(n.output(0))));
}

void Importer::conv(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const bool two_d = d.size() == 4;
  if (d.size() != 3 && d.size() != 4) unsupported(n, "Conv takes [N, C, L] or [N, C, H, W]");
  const std::string auto_pad = attribute(n, "auto_pad") ? attribute(n, "auto_pad")->s() : "NOTSET";
  if (auto_pad != "NOTSET") unsupported(n, "auto_pad " + auto_pad + " (export with explicit pads)");
  const size_t spatial = d.size() - 2;
  const Dims strides = ints_attr(n, "strides", Dims(spatial, 1)), dilations = ints_attr(n, "dilations", Dims(spatial, 1));
  const Dims pads = ints_attr(n, "pads", Dims(2 * spatial, 0));
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
    unsupported(n, "strides, dilations and pads must have one entry per spatial axis (pads two)");
  }
  for (size_t k = 0; k < spatial; ++k) {
    if (pads[k] != pads[k + spatial]) unsupported(n, "pads differ at the two ends of an axis");
  }
  const int x = tensor(n, 0);
  const int w = adopt(n, 1, Role::kParam);
  const int bias = n.input_size() > 2 && !n.input(2).empty() ? adopt(n, 2, Role::kParam) : -1;
  Builder::ConvSpec spec;
  spec.groups = int_attr(n, "group", 1);
  spec.stride_h = two_d ? strides[0] : 1;
  spec.stride_w = strides.back();
  spec.pad_h = two_d ? pads[0] : 0;
  spec.pad_w = pads[spatial - 1];
  spec.dilation_h = two_d ? dilations[0] : 1;
  spec.dilation_w = dilations.back();
  define(n, 0, b_.conv_with(x, w, bias, spec, out_.graph.unique_name(n.output(0))));
}

void Importer::batch_norm(const onnx::NodeProto& n) {
  for (int k = 1; k < n.output_size(); ++k) {
    // Training-mode exports name the updated running statistics; remat updates them itself.
    for (const onnx::NodeProto& other : model_.graph().node()) {
      for (const std::string& in : other.input()) {
        if (in == n.output(k)) unsupported(n, "output '" + n.output(k) + "' (a running statistic) is read by a node");
      }
    }
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(n, 1, Role::kParam), beta = adopt(n, 2, Role::kParam);
  const int mean = adopt(n, 3, Role::kState), var = adopt(n, 4, Role::kState);
  // torch names them PREFIX.weight, .bias, .running_mean, .running_var; num_batches_tracked is
  // not exported, and starts at 0.
  std::string prefix = n.input(1);
  if (prefix.size() > 7 && prefix.compare(prefix.size() - 7, 7, ".weight") == 0) prefix.resize(prefix.size() - 7);
  // ONNX's momentum weighs the running statistic, torch's (1 - it) the batch's; read to 6
  // significant digits, so that torch's 0.1, exported as 0.9f, is 0.1f again (not 0.100000024).
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", 1.0 - static_cast<double>(float_attr(n, "momentum", 0.9f)));
  const float momentum = std::strtof(text, nullptr);
  define(n, 0, b_.batch_norm_with(x, gamma, beta, mean, var, prefix, float_attr(n, "epsilon", 1e-5f), momentum));
}

void Importer::pool(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  if (d.size() != 3 && d.size() != 4) unsupported(n, "pooling takes [N, C, L] or [N, C, H, W]");
  const std::string name = out_.graph.unique_name(n.output(0));
  if (n.op_type() == "GlobalAveragePool") {
    // remat's [N, C], which ONNX calls [N, C, 1, 1] (or [N, C, 1]).
    Dims logical = {d[0], d[1]};
    logical.resize(d.size(), 1);
    return define(n, 0, b_.global_avg_pool(tensor(n, 0), name), logical);
  }
  const size_t spatial = d.size() - 2;
  const Dims kernel = ints_attr(n, "kernel_shape", {});
  const Dims strides = ints_attr(n, "strides", Dims(spatial, 1)), pads = ints_attr(n, "pads", Dims(2 * spatial, 0));
  const std::string auto_pad = attribute(n, "auto_pad") ? attribute(n, "auto_pad")->s() : "NOTSET";
  if (auto_pad != "NOTSET") unsupported(n, "auto_pad " + auto_pad + " (export with explicit pads)");
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    unsupported(n, "kernel_shape, strides and pads must have one entry per spatial axis (pads two)");
  }
  for (size_t k = 1; k < 2 * spatial; ++k) {
    if (pads[k] != pads[0]) unsupported(n, "remat pools with the same padding on every side");
  }
  for (size_t k = 1; k < spatial; ++k) {
    if (kernel[k] != kernel[0] || strides[k] != strides[0]) unsupported(n, "remat pools square windows with one stride");
  }
  for (int64_t dil : ints_attr(n, "dilations", {})) {
    if (dil != 1) unsupported(n, "dilated pooling");
  }
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported(n, "MaxPool's indices output");
  const bool ceil = int_attr(n, "ceil_mode", 0) != 0;
  const int x = tensor(n, 0);
  const int y = n.op_type() == "MaxPool"
                    ? b_.max_pool(x, kernel[0], strides[0], pads[0], ceil, name)
                    : b_.avg_pool(x, kernel[0], strides[0], pads[0], ceil, int_attr(n, "count_include_pad", 0) != 0, name);
  define(n, 0, y);
}

void Importer::reshape(const onnx::NodeProto& n, const Dims& target) {
  const auto it = tensors_.find(n.input(0));
  if (it == tensors_.end()) tensor(n, 0);  // names what is wrong
  const int x = it->second;
  if (out_.graph.tensors[x].shape == target) return define(n, 0, x);
  // A copy with the new shape: remat's tensors are contiguous.
  const int y = out_.graph.add_tensor(out_.graph.unique_name(n.output(0)), REMAT_DTYPE_F32, target, Role::kActivation);
  out_.graph.add_op(OpCode::kCopy, {x}, {y});
  define(n, 0, y);
}

void Importer::concat(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  std::vector<int> parts;
  for (int k = 0; k < n.input_size(); ++k) parts.push_back(tensor(n, k));
  define(n, 0, b_.concat(parts, axis, out_.graph.unique_name(n.output(0))));
}

void Importer::pad(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const std::string mode = attribute(n, "mode") ? attribute(n, "mode")->s() : "constant";
  if (mode != "constant") unsupported(n, "mode " + mode + " (remat pads with a constant)");
  const Constant& pads = constant(n, 1);
  float value = 0.0f;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Constant& v = constant(n, 2);
    if (v.f.size() != 1) unsupported(n, "the pad value must be one float");
    value = v.f[0];
  }
  const size_t rank = d.size();
  if (pads.i.size() != 2 * rank || (rank != 3 && rank != 4)) unsupported(n, "pads for every axis of [N, C, L] or [N, C, H, W]");
  for (size_t k = 0; k < 2; ++k) {
    if (pads.i[k] != 0 || pads.i[k + rank] != 0) unsupported(n, "padding of the batch or channel axis");
  }
  const int64_t top = rank == 4 ? pads.i[2] : 0, bottom = rank == 4 ? pads.i[2 + rank] : 0;
  for (int64_t p : pads.i) {
    if (p < 0) unsupported(n, "negative pads (cropping)");
  }
  define(n, 0, b_.pad(tensor(n, 0), top, bottom, pads.i[rank - 1], pads.i[2 * rank - 1], value,
                      out_.graph.unique_name(n.output(0))));
}

void Importer::dropout(const onnx::NodeProto& n) {
  float ratio = 0.5f;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const Constant& r = constant(n, 1);
    if (r.f.size() != 1) unsupported(n, "the ratio must be one float");
    ratio = r.f[0];
  }
  bool training = false;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Constant& t = constant(n, 2);
    training = !t.i.empty() ? t.i[0] != 0 : !t.f.empty() && t.f[0] != 0.0f;
  }
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported(n, "Dropout's mask output");
  const int x = tensor(n, 0);
  // An eval-mode export passes the input through; remat trains, so a training-mode Dropout
  // drops with remat's RNG at the model's ratio.
  define(n, 0, training ? b_.dropout(x, ratio, out_.graph.unique_name(n.output(0))) : x);
}

void Importer::attach_loss(OnnxLoss loss) {
  const onnx::GraphProto& g = model_.graph();
  if (g.output_size() != 1) {
    throw CompileError(path_ + ": the graph has " + std::to_string(g.output_size()) +
                       " outputs; remat trains a model with one output and attaches --loss to it");
  }
  const std::string& name = g.output(0).name();
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw CompileError(path_ + ": output '" + name + "' is a constant, or produced by no node");
  const Dims d = shape_of(name);
  if (loss == OnnxLoss::kNone) {
    throw CompileError(path_ + ": output '" + name + "' " + dims_text(d) +
                       " is not a loss; give --loss cross_entropy or --loss mse (remat does not import loss nodes)");
  }
  const int y = it->second;
  const Dims held = out_.graph.tensors[y].shape;
  if (loss == OnnxLoss::kCrossEntropy) {
    if (held.size() != 2) {
      throw CompileError(path_ + ": --loss cross_entropy needs an output [batch, classes]; '" + name + "' is " + dims_text(d));
    }
    b_.softmax_cross_entropy(y, b_.label("labels", REMAT_DTYPE_I32, {held[0]}));
  } else {
    b_.mse(y, b_.label("labels", REMAT_DTYPE_F32, held));
  }
}

OnnxImport Importer::run(OnnxLoss loss) {
  const onnx::GraphProto& g = model_.graph();
  for (const onnx::TensorProto& t : g.initializer()) {
    Constant c = decode(t, "initializer");
    c.initializer = t.name();
    constants_[t.name()] = std::move(c);
  }
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (is_constant(in.name())) continue;  // an initializer listed as an input (older exports)
    const onnx::TypeProto_Tensor& type = in.type().tensor_type();
    Dims dims;
    for (int k = 0; k < type.shape().dim_size(); ++k) {
      const onnx::TensorShapeProto_Dimension& dim = type.shape().dim(k);
      if (k == 0) {
        if (dim.has_dim_value() && dim.dim_value() != batch_) {
          throw CompileError(path_ + ": input '" + in.name() + "' has a fixed batch of " +
                             std::to_string(dim.dim_value()) + ", and --batch is " + std::to_string(batch_) +
                             " (export with a dynamic batch axis, or compile with --batch " +
                             std::to_string(dim.dim_value()) + ")");
        }
        dims.push_back(batch_);
      } else if (dim.has_dim_value() && dim.dim_value() > 0) {
        dims.push_back(dim.dim_value());
      } else {
        throw CompileError(path_ + ": input '" + in.name() + "' has a dynamic axis " + std::to_string(k) +
                           " ('" + dim.dim_param() + "'); only the batch axis may be dynamic");
      }
    }
    if (dims.empty()) throw CompileError(path_ + ": input '" + in.name() + "' is a scalar; inputs have a batch axis");
    const int32_t type_id = type.elem_type();
    if (type_id == onnx::TensorProto_DataType_FLOAT) {
      tensors_[in.name()] = b_.input(in.name(), REMAT_DTYPE_F32, dims);
    } else if (type_id == onnx::TensorProto_DataType_INT64 || type_id == onnx::TensorProto_DataType_INT32) {
      tensors_[in.name()] = b_.input(in.name(), REMAT_DTYPE_I32, dims);
    } else {
      throw CompileError(path_ + ": input '" + in.name() + "' has element type " +
                         onnx::TensorProto_DataType_Name(type_id) + " (remat binds FLOAT, and INT64 or INT32 as i32)");
    }
  }
  for (const onnx::NodeProto& n : g.node()) node(n);
  attach_loss(loss);
  return std::move(out_);
}

}  // namespace

OnnxImport import_onnx(const std::string& path, int64_t batch, OnnxLoss loss) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw CompileError(path + ": cannot open the model (" + std::strerror(errno) + ")");
  std::stringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes.str())) throw CompileError(path + ": not an ONNX model (its protobuf does not parse)");
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw CompileError(path + ": the ONNX checker refuses the model: " + e.what());
  }
  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& set : model.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") opset = set.version();
  }
  if (opset < kOldestOpset || opset > kNewestOpset) {
    throw CompileError(path + ": opset " + std::to_string(opset) + "; remat imports opsets " +
                       std::to_string(kOldestOpset) + " to " + std::to_string(kNewestOpset) +
                       " (torch.onnx.export(..., opset_version=17))");
  }
  if (batch < 1) throw CompileError("--batch " + std::to_string(batch) + ": must be at least 1");
  return Importer(model, path, batch, opset).run(loss);
}

}  // namespace compiler
}  // namespace remat
