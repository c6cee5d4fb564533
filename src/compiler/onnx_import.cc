// The ONNX importer of onnx_import.h, over Debian's libonnx (ModelProto, the checker).
#include "compiler/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "compiler/builder.h"

namespace remat {
namespace compiler {
namespace {

using Dims = std::vector<int64_t>;

// Most elements of one constant or initializer (16 GiB of floats).
constexpr int64_t kMaxConstantElements = int64_t{1} << 32;
// Most elements of a folded Range, and the largest dim, stride, pad or size an attribute or a
// shape constant may give: far past any real model, and far from int64 overflow in products.
constexpr int64_t kMaxFolded = int64_t{1} << 24;
constexpr int64_t kMaxDim = int64_t{1} << 31;

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

// The elements of |t| (raw_data or the typed field); throws for other types, external data and
// a field whose element count is not the dims' (checked before anything is allocated).
Constant decode(const onnx::TensorProto& t, const std::string& what) {
  Constant c;
  c.type = t.data_type();
  c.dims.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : c.dims) {
    if (d < 0 || (d > 0 && n > kMaxConstantElements / d)) {
      throw CompileError(what + " '" + t.name() + "' has dims " + dims_text(c.dims) + " (each at least 0, at most " +
                         std::to_string(kMaxConstantElements) + " elements)");
    }
    n *= d;
  }
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    throw CompileError(what + " '" + t.name() + "' keeps its data in an external file, which remat does not read");
  }
  const std::string& raw = t.raw_data();
  // The element count the data holds: raw bytes over the item size, else the typed field's.
  auto require = [&](size_t item, int typed, const char* type) {
    const bool from_raw = !raw.empty();
    const uint64_t held = from_raw ? raw.size() / item : static_cast<uint64_t>(typed);
    if (held != static_cast<uint64_t>(n) || (from_raw && raw.size() % item != 0)) {
      throw CompileError(what + " '" + t.name() + "': " + (from_raw ? std::to_string(raw.size()) + " bytes" : std::to_string(typed) + " values") +
                         " of " + type + " data for " + std::to_string(n) + " elements " + dims_text(c.dims));
    }
    return from_raw;
  };
  switch (c.type) {
    case onnx::TensorProto_DataType_FLOAT:
      if (require(4, t.float_data_size(), "float")) {
        c.f.resize(static_cast<size_t>(n));
        std::memcpy(c.f.data(), raw.data(), raw.size());
      } else {
        c.f.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case onnx::TensorProto_DataType_INT64:
      if (require(8, t.int64_data_size(), "int64")) {
        c.i.resize(static_cast<size_t>(n));
        std::memcpy(c.i.data(), raw.data(), raw.size());
      } else {
        c.i.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_BOOL: {  // widened; BOOL is Dropout's training_mode
      const bool boolean = c.type == onnx::TensorProto_DataType_BOOL;
      if (require(boolean ? 1 : 4, t.int32_data_size(), boolean ? "bool" : "int32")) {
        c.i.resize(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) {
          int32_t v = 0;
          if (boolean) {
            v = raw[static_cast<size_t>(k)] != 0;
          } else {
            std::memcpy(&v, raw.data() + 4 * k, 4);
          }
          c.i[static_cast<size_t>(k)] = v;
        }
      } else {
        c.i.assign(t.int32_data().begin(), t.int32_data().end());
        if (boolean) {
          for (int64_t& v : c.i) v = v != 0;
        }
      }
      c.type = onnx::TensorProto_DataType_INT64;
      break;
    }
    default:
      throw CompileError(what + " '" + t.name() + "' has element type " + onnx::TensorProto_DataType_Name(c.type) +
                         " (remat reads FLOAT, INT64, INT32 and BOOL constants)");
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
  // Input |input| of |n| as an int64 constant (shapes, axes, indices, sizes).
  const Constant& int_constant(const onnx::NodeProto& n, int input) const;
  // Refuses |values| (named |what|) outside [lo, kMaxDim].
  void bounded(const onnx::NodeProto& n, const Dims& values, int64_t lo, const char* what) const;
  int tensor(const onnx::NodeProto& n, int input);
  Dims shape_of(const std::string& name) const;
  // A parameter (or state) tensor from initializer |c| of |n|'s input |input|, made once.
  int adopt(const onnx::NodeProto& n, int input, Role role);
  // The same for initializer |name| (a transposed weight's).
  int adopt_named(const onnx::NodeProto& n, const std::string& name, Role role);
  // A fresh activation of |shape| named after |hint|.
  int fresh(const std::string& hint, const Dims& shape, remat_dtype dtype = REMAT_DTYPE_F32);
  // Whether input |input| of |n| is a float scalar constant; its value in |value|.
  bool scalar(const onnx::NodeProto& n, int input, float* value) const;
  void define(const onnx::NodeProto& n, int output, int tensor, Dims logical = {});
  void define_constant(const onnx::NodeProto& n, int output, Constant c);

  // ---- nodes -------------------------------------------------------------------------------
  void node(const onnx::NodeProto& n);
  void import_node(const onnx::NodeProto& n);
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
  void cross_entropy_loss(const onnx::NodeProto& n);
  void transpose(const onnx::NodeProto& n);
  void gather(const onnx::NodeProto& n);
  void arithmetic(const onnx::NodeProto& n);
  bool gelu(const onnx::NodeProto& n);
  bool decomposed_layer_norm(const onnx::NodeProto& n);
  void layer_norm(const onnx::NodeProto& n);
  void split(const onnx::NodeProto& n);
  void slice(const onnx::NodeProto& n);
  // The one node that reads value |name| (nullptr: none or several, or the graph's output).
  const onnx::NodeProto* sole_reader(const std::string& name) const;
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
  std::map<std::string, std::string> transposed_;    // value -> the 2-D initializer it transposes
  std::map<std::string, std::vector<int>> readers_;  // value -> the nodes that read it
  std::set<const onnx::NodeProto*> done_;            // nodes a pattern already imported
};

const Constant& Importer::constant(const onnx::NodeProto& n, int input) const {
  const auto it = input < n.input_size() ? constants_.find(n.input(input)) : constants_.end();
  if (it == constants_.end()) unsupported(n, "input " + std::to_string(input) + " must be a constant (an initializer)");
  return it->second;
}

const Constant& Importer::int_constant(const onnx::NodeProto& n, int input) const {
  const Constant& c = constant(n, input);
  if (c.type != onnx::TensorProto_DataType_INT64) unsupported(n, "input " + std::to_string(input) + " must be integers");
  return c;
}

void Importer::bounded(const onnx::NodeProto& n, const Dims& values, int64_t lo, const char* what) const {
  for (int64_t v : values) {
    if (v < lo || v > kMaxDim) {
      unsupported(n, std::string(what) + " " + std::to_string(v) + " outside [" + std::to_string(lo) + ", 2^31]");
    }
  }
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
  constant(n, input);  // names what is wrong
  return adopt_named(n, n.input(input), role);
}

int Importer::fresh(const std::string& hint, const Dims& shape, remat_dtype dtype) {
  return out_.graph.add_tensor(out_.graph.unique_name(hint), dtype, shape, Role::kActivation);
}

bool Importer::scalar(const onnx::NodeProto& n, int input, float* value) const {
  const auto it = input < n.input_size() ? constants_.find(n.input(input)) : constants_.end();
  if (it == constants_.end() || it->second.numel() != 1) return false;
  *value = it->second.type == onnx::TensorProto_DataType_FLOAT ? it->second.f[0] : static_cast<float>(it->second.i[0]);
  return true;
}

const onnx::NodeProto* Importer::sole_reader(const std::string& name) const {
  const auto it = readers_.find(name);
  if (it == readers_.end() || it->second.size() != 1) return nullptr;
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    if (out.name() == name) return nullptr;  // the graph's output is read outside too
  }
  return &model_.graph().node(it->second[0]);
}

int Importer::adopt_named(const onnx::NodeProto& n, const std::string& name, Role role) {
  const auto found = constants_.find(name);
  if (found == constants_.end()) unsupported(n, "'" + name + "' must be an initializer (a parameter)");
  const Constant& c = found->second;
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
  // A refusal from the builder or the op checks names the op and tensors but not the node: add it.
  try {
    import_node(n);
  } catch (const CompileError& e) {
    const std::string what = e.what();
    if (what.compare(0, path_.size(), path_) == 0) throw;  // unsupported() named it already
    unsupported(n, what);
  }
}

void Importer::import_node(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") unsupported(n, "domain '" + n.domain() + "' is not ONNX's");
  const std::string& op = n.op_type();
  bool all_constant = n.input_size() > 0;
  for (const std::string& in : n.input()) all_constant &= in.empty() || is_constant(in);
  if (done_.count(&n) != 0) return;  // a Constant, or imported with a pattern (gelu)
  // Rows of a parameter table at constant ids are computed, not folded: the table trains.
  const bool table = op == "Gather" && is_constant(n.input(0)) &&
                     constants_.at(n.input(0)).type == onnx::TensorProto_DataType_FLOAT;
  if (table) return gather(n);
  if (op == "Constant" || op == "Shape" || (all_constant && op != "Dropout" && op != "Transpose")) return fold(n);
  if (op == "Transpose") return transpose(n);
  if (op == "Gather") return gather(n);
  if (op == "Sub" || op == "Mul" || op == "Div") return arithmetic(n);
  if (op == "LayerNormalization") return layer_norm(n);
  if (op == "ReduceMean") {
    if (decomposed_layer_norm(n)) return;
    unsupported(n, "ReduceMean outside the decomposed LayerNorm that opsets before 17 write");
  }
  if (op == "Split") return split(n);
  if (op == "Slice") return slice(n);
  if (op == "Squeeze" || op == "Unsqueeze") {
    // Of a computed tensor: the same bytes in another shape (axes from the input, opset 13+).
    Dims d = shape_of(n.input(0));
    Dims axes;
    if (n.input_size() > 1 && !n.input(1).empty()) axes.assign(int_constant(n, 1).i.begin(), int_constant(n, 1).i.end());
    const int64_t rank = static_cast<int64_t>(d.size()) + (op == "Unsqueeze" ? static_cast<int64_t>(axes.size()) : 0);
    for (int64_t& a : axes) {
      a = a < 0 ? a + rank : a;
      if (a < 0 || a >= rank) unsupported(n, "an axis outside the rank");
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) unsupported(n, "an axis listed twice");
    if (op == "Unsqueeze") {
      for (int64_t a : axes) d.insert(d.begin() + a, 1);
    } else {
      Dims kept;
      for (size_t k = 0; k < d.size(); ++k) {
        const bool listed = std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) != axes.end();
        if ((axes.empty() && d[k] == 1) || (listed && d[k] == 1)) continue;
        if (listed) unsupported(n, "squeezing an axis of size " + std::to_string(d[k]));
        kept.push_back(d[k]);
      }
      d = kept;
    }
    return reshape(n, d);
  }
  if (op == "Gemm") return gemm(n);
  if (op == "MatMul") return matmul(n);
  if (op == "Add") return add(n);
  if (op == "Conv") return conv(n);
  if (op == "BatchNormalization") return batch_norm(n);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") return pool(n);
  if (op == "Concat") return concat(n);
  if (op == "Pad") return pad(n);
  if (op == "Dropout") return dropout(n);
  if (op == "SoftmaxCrossEntropyLoss") return cross_entropy_loss(n);
  if (op == "Neg") {
    const int x = tensor(n, 0);
    const int y = fresh(n.output(0), out_.graph.tensors[x].shape);
    out_.graph.add_op(OpCode::kScale, {x}, {y}, {}, {-1.0f});
    return define(n, 0, y);
  }
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
    const Constant& target = int_constant(n, 1);
    const Dims d = shape_of(n.input(0));
    Dims out(target.i.begin(), target.i.end());
    bounded(n, out, -1, "target dim");
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == 0 && int_attr(n, "allowzero", 0) == 0) {
        if (k >= d.size()) unsupported(n, "a 0 in the target shape past the input's rank");
        out[k] = d[k];
      }
      if (out[k] == -1) {
        if (infer >= 0) unsupported(n, "two -1 in the target shape");
        infer = static_cast<int64_t>(k);
      } else if (__builtin_mul_overflow(known, out[k], &known) || known > product(d)) {
        unsupported(n, "target shape " + dims_text(out) + " holds more elements than the input");
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
    if (v != nullptr && v->has_t()) return define_constant(n, 0, decode(v->t(), "constant"));
    Constant c;
    if ((v = attribute(n, "value_float")) != nullptr || (v = attribute(n, "value_floats")) != nullptr) {
      c.type = onnx::TensorProto_DataType_FLOAT;
      if (v->name() == "value_float") {
        c.f = {v->f()};
      } else {
        c.f.assign(v->floats().begin(), v->floats().end());
        c.dims = {static_cast<int64_t>(c.f.size())};
      }
    } else if ((v = attribute(n, "value_int")) != nullptr || (v = attribute(n, "value_ints")) != nullptr) {
      c.type = onnx::TensorProto_DataType_INT64;
      if (v->name() == "value_int") {
        c.i = {v->i()};
      } else {
        c.i.assign(v->ints().begin(), v->ints().end());
        c.dims = {static_cast<int64_t>(c.i.size())};
      }
    } else {
      unsupported(n, "a Constant of a tensor, float(s) or int(s) only");
    }
    return define_constant(n, 0, c);
  }
  if (op == "Shape") {
    Constant c;
    c.type = onnx::TensorProto_DataType_INT64;
    const Dims d = shape_of(n.input(0));
    if (d.empty()) unsupported(n, "the input's shape is not known");
    // start and end (opset 15), clamped to the rank as ONNX defines.
    const int64_t rank = static_cast<int64_t>(d.size());
    auto clamp = [rank](int64_t v) { return v < 0 ? std::max<int64_t>(0, v + rank) : std::min(v, rank); };
    const int64_t begin = clamp(int_attr(n, "start", 0)), end = clamp(int_attr(n, "end", rank));
    for (int64_t k = begin; k < end; ++k) c.i.push_back(d[static_cast<size_t>(k)]);
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
        for (float f : c.f) {
          if (!(std::fabs(f) < 9.2e18f)) unsupported(n, "a cast to int64 of " + std::to_string(f));
          c.i.push_back(static_cast<int64_t>(f));
        }
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
    // A scalar to [1] and back (shape arithmetic); the axes must say so.
    out = ints(0);
    Dims axes;
    if (n.input_size() > 1 && !n.input(1).empty()) axes = int_constant(n, 1).i;
    const bool scalar_in = out.dims.empty();
    if (axes.size() > 1 || (op == "Unsqueeze" && (!scalar_in || axes.empty() || (axes[0] != 0 && axes[0] != -1))) ||
        (op == "Squeeze" && (out.dims != Dims{1} || (!axes.empty() && axes[0] != 0 && axes[0] != -1)))) {
      unsupported(n, "a folded " + op + " takes a scalar to [1] or back");
    }
    out.dims = op == "Unsqueeze" ? Dims{1} : Dims{};
  } else if (op == "Range") {
    for (int k = 0; k < 3; ++k) {
      if (ints(k).numel() != 1) unsupported(n, "Range takes three scalars");
    }
    const int64_t start = ints(0).i[0], limit = ints(1).i[0], delta = ints(2).i[0];
    if (delta == 0) unsupported(n, "a Range with delta 0");
    // max(ceil((limit - start) / delta), 0) values, computed without overflow.
    const __int128 span = static_cast<__int128>(limit) - start;
    __int128 count = span / delta + (span % delta != 0 && (span > 0) == (delta > 0) ? 1 : 0);
    if (count < 0) count = 0;
    if (count > kMaxFolded) unsupported(n, "a Range of more than 2^24 values");
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) out.i.push_back(static_cast<int64_t>(start + static_cast<__int128>(k) * delta));
    out.dims = {static_cast<int64_t>(out.i.size())};
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    const Constant& a = ints(0);
    const Constant& b = ints(1);
    if ((a.numel() != b.numel() && a.numel() != 1 && b.numel() != 1) || a.numel() == 0 || b.numel() == 0) {
      unsupported(n, "folded operands of other sizes, or empty");
    }
    const int64_t count = std::max(a.numel(), b.numel());
    for (int64_t k = 0; k < count; ++k) {
      const int64_t x = a.i[static_cast<size_t>(a.numel() == 1 ? 0 : k)], y = b.i[static_cast<size_t>(b.numel() == 1 ? 0 : k)];
      if (op == "Div" && (y == 0 || (x == INT64_MIN && y == -1))) unsupported(n, "an integer division that overflows");
      int64_t v = 0;
      const bool overflow = op == "Add"   ? __builtin_add_overflow(x, y, &v)
                            : op == "Sub" ? __builtin_sub_overflow(x, y, &v)
                            : op == "Mul" ? __builtin_mul_overflow(x, y, &v)
                                          : (v = x / y, false);
      if (overflow) unsupported(n, "integer arithmetic that overflows 64 bits");
      out.i.push_back(v);
    }
    out.dims = a.numel() >= b.numel() ? a.dims : b.dims;
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
  if (a.size() < 2) unsupported(n, "MatMul of vectors");
  const auto t = transposed_.find(n.input(1));
  if (t != transposed_.end()) {  // x @ W^T: nn.Linear on more than 2 dims
    const int x = tensor(n, 0);
    const int w = adopt_named(n, t->second, Role::kParam);
    const Dims wd = out_.graph.tensors[w].shape;
    if (wd[1] != a.back()) unsupported(n, "the transposed weight does not match A's last dim");
    Dims out = a;
    out.back() = wd[0];
    return define(n, 0, b_.matmul(x, w, false, true, 1.0f, out, out_.graph.unique_name(n.output(0))));
  }
  if (!is_constant(n.input(1))) {  // two computed tensors, batched alike (attention)
    const Dims bd = shape_of(n.input(1));
    if (bd.size() != a.size() || !std::equal(a.begin(), a.end() - 2, bd.begin()) || bd[bd.size() - 2] != a.back()) {
      unsupported(n, "MatMul of computed tensors needs equal batch dims and A's columns equal to B's rows");
    }
    Dims out = a;
    out.back() = bd.back();
    const int x = tensor(n, 0), y = tensor(n, 1);
    return define(n, 0, b_.matmul(x, y, false, false, 1.0f, out, out_.graph.unique_name(n.output(0))));
  }
  const int x = tensor(n, 0);
  const int w = adopt(n, 1, Role::kParam);
  const Dims wd = out_.graph.tensors[w].shape;
  if (wd.size() != 2 || wd[0] != a.back()) unsupported(n, "B must be a 2-D parameter [K, N] matching A's last dim");
  Dims out = a;
  out.back() = wd[1];
  define(n, 0, b_.matmul(x, w, false, false, 1.0f, out, out_.graph.unique_name(n.output(0))));
}

// Whether |small| is |big|'s trailing dims (a bias_add's b).
bool trailing(const Dims& big, const Dims& small) {
  return !small.empty() && small.size() < big.size() && std::equal(small.begin(), small.end(), big.end() - small.size());
}

void Importer::add(const onnx::NodeProto& n) {
  // A bias: a tensor plus a float initializer of its trailing dims (either order).
  for (int side = 0; side < 2; ++side) {
    if (!is_constant(n.input(side)) || is_constant(n.input(1 - side))) continue;
    const Dims d = shape_of(n.input(1 - side));
    if (!trailing(d, constant(n, side).dims)) unsupported(n, "a constant added must be a bias of the other's trailing dims");
    const int x = tensor(n, 1 - side);
    return define(n, 0, b_.bias_add(x, adopt(n, side, Role::kParam), out_.graph.unique_name(n.output(0))));
  }
  const Dims a = shape_of(n.input(0)), b = shape_of(n.input(1));
  const std::string name = out_.graph.unique_name(n.output(0));
  if (a == b) {
    const int x = tensor(n, 0), y = tensor(n, 1);
    return define(n, 0, b_.add(x, y, name));
  }
  // Broadcast of the trailing dims only (token plus position embeddings).
  for (int side = 0; side < 2; ++side) {
    if (!trailing(side ? a : b, side ? b : a)) continue;
    const int x = tensor(n, side ? 0 : 1), y = tensor(n, side ? 1 : 0);
    return define(n, 0, b_.bias_add(x, y, name));
  }
  unsupported(n, "Add of tensors whose shapes broadcast other than along leading dims");
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
    if (strides[k] < 1 || dilations[k] < 1 || pads[k] < 0) unsupported(n, "strides and dilations below 1, or negative pads");
  }
  bounded(n, strides, 1, "stride");
  bounded(n, dilations, 1, "dilation");
  bounded(n, pads, 0, "pad");
  bounded(n, {int_attr(n, "group", 1)}, 1, "group");
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
    if (!n.output(k).empty() && readers_.count(n.output(k)) != 0) {
      unsupported(n, "output '" + n.output(k) + "' (a running statistic) is read by a node");
    }
  }
  if (attribute(n, "training_mode") != nullptr && int_attr(n, "training_mode", 0) == 0) {
    out_.warnings.push_back("BatchNormalization node " + name_of(n) +
                            " was exported in eval mode (training_mode 0); remat trains it on batch statistics "
                            "and updates its running statistics, as PyTorch's train() does");
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
  if (kernel[0] < 1 || strides[0] < 1 || pads[0] < 0) unsupported(n, "kernel or strides below 1, or negative pads");
  bounded(n, {kernel[0], strides[0], pads[0]}, 0, "kernel, stride or pad");
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
  if (axis < 0 || axis >= static_cast<int64_t>(d.size())) unsupported(n, "axis outside the inputs' rank");
  for (int k = 1; k < n.input_size(); ++k) {
    if (shape_of(n.input(k)).size() != d.size()) unsupported(n, "inputs of different ranks");
  }
  std::vector<int> parts;
  for (int k = 0; k < n.input_size(); ++k) parts.push_back(tensor(n, k));
  define(n, 0, b_.concat(parts, axis, out_.graph.unique_name(n.output(0))));
}

void Importer::pad(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const std::string mode = attribute(n, "mode") ? attribute(n, "mode")->s() : "constant";
  if (mode != "constant") unsupported(n, "mode " + mode + " (remat pads with a constant)");
  const Constant& pads = int_constant(n, 1);
  bounded(n, pads.i, 0, "pad");
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

void Importer::transpose(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  Dims perm = ints_attr(n, "perm", {});
  if (perm.empty()) {
    for (size_t k = d.size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  if (is_constant(n.input(0))) {
    // A weight transposed for x @ W^T: MatMul reads the initializer with trans_b.
    if (d.size() != 2 || perm != Dims{1, 0} || constants_.at(n.input(0)).initializer.empty()) {
      unsupported(n, "a transposed constant must be a 2-D initializer");
    }
    transposed_[n.output(0)] = n.input(0);
    return;
  }
  if (perm.size() != d.size()) unsupported(n, "perm does not match the input's rank");
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(d.size())) unsupported(n, "perm entry " + std::to_string(p));
    out.push_back(d[static_cast<size_t>(p)]);
  }
  const int x = tensor(n, 0);
  define(n, 0, b_.permute(x, d, perm, out, out_.graph.unique_name(n.output(0))));
}

void Importer::gather(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (is_constant(n.input(0))) {
    // An embedding: rows of a parameter table picked by ids.
    if (axis != 0 || d.size() != 2) unsupported(n, "Gather from a parameter takes rows of a 2-D table (axis 0)");
    const int table = adopt(n, 0, Role::kParam);
    int ids;
    if (is_constant(n.input(1))) {
      // Constant ids (positions): an i32 tensor the plan carries.
      const Constant& c = int_constant(n, 1);
      if (c.dims.empty()) unsupported(n, "constant ids must have at least one dim");
      for (int64_t v : c.i) {
        if (v < 0 || v >= d[0]) unsupported(n, "constant id " + std::to_string(v) + " outside the table's rows");
      }
      ids = out_.graph.add_tensor(out_.graph.unique_name(n.input(1)), REMAT_DTYPE_I32, c.dims, Role::kState, Init::kData);
      std::vector<uint8_t>& data = out_.graph.tensors[ids].init_data;
      for (int64_t v : c.i) {
        const int32_t id = static_cast<int32_t>(v);
        const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&id);
        data.insert(data.end(), bytes, bytes + sizeof(id));
      }
    } else {
      ids = tensor(n, 1);
      if (out_.graph.tensors[ids].dtype != REMAT_DTYPE_I32) unsupported(n, "ids must be an integer input");
    }
    return define(n, 0, b_.embedding(ids, table, out_.graph.unique_name(n.output(0))));
  }
  // One index of an axis of a computed tensor ([:, 0] of a sequence).
  if (axis < 0 || axis >= static_cast<int64_t>(d.size())) unsupported(n, "axis outside the input's rank");
  if (!is_constant(n.input(1)) || int_constant(n, 1).numel() != 1 || !int_constant(n, 1).dims.empty()) {
    unsupported(n, "Gather from a computed tensor takes one constant index (a scalar)");
  }
  int64_t at = int_constant(n, 1).i[0];
  if (at < 0) at += d[static_cast<size_t>(axis)];
  if (at < 0 || at >= d[static_cast<size_t>(axis)]) unsupported(n, "index outside the axis");
  const int x = tensor(n, 0);
  define(n, 0, b_.select(x, static_cast<int>(axis), at, out_.graph.unique_name(n.output(0))));
}

void Importer::arithmetic(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Div" && gelu(n)) return;
  const std::string name = out_.graph.unique_name(n.output(0));
  float c = 0.0f;
  // A computed tensor times or over a constant scalar: scale.
  if (!is_constant(n.input(0)) && scalar(n, 1, &c) && op != "Sub") {
    if (constant(n, 1).dims.size() > shape_of(n.input(0)).size()) unsupported(n, "a constant of higher rank");
    const float alpha = op == "Mul" ? c : static_cast<float>(1.0 / static_cast<double>(c));
    if (op == "Div" && c == 0.0f) unsupported(n, "division by zero");
    const int x = tensor(n, 0);
    const int y = fresh(name, out_.graph.tensors[x].shape);
    out_.graph.add_op(OpCode::kScale, {x}, {y}, {}, {alpha});
    return define(n, 0, y);
  }
  if (op == "Mul" && is_constant(n.input(0)) && scalar(n, 0, &c) && !is_constant(n.input(1))) {
    const int x = tensor(n, 1);
    const int y = fresh(name, out_.graph.tensors[x].shape);
    out_.graph.add_op(OpCode::kScale, {x}, {y}, {}, {c});
    return define(n, 0, y);
  }
  if (is_constant(n.input(0)) || is_constant(n.input(1)) || shape_of(n.input(0)) != shape_of(n.input(1))) {
    unsupported(n, op + " of computed tensors of one shape, or of a computed tensor by a constant scalar");
  }
  const int a = tensor(n, 0), b = tensor(n, 1);
  const Dims d = out_.graph.tensors[a].shape;
  if (op == "Mul") {
    const int y = fresh(name, d);
    out_.graph.add_op(OpCode::kMul, {a, b}, {y});
    return define(n, 0, y);
  }
  if (op == "Sub") {  // a + (-1) b
    const int negated = fresh(name + ".negated", d);
    out_.graph.add_op(OpCode::kScale, {b}, {negated}, {}, {-1.0f});
    return define(n, 0, b_.add(a, negated, name));
  }
  unsupported(n, "Div of two computed tensors");
}

// The exact GELU as torch exports it: x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5, each node the
// only reader of the one before. Imported as one gelu op.
bool Importer::gelu(const onnx::NodeProto& n) {
  float c = 0.0f;
  if (!scalar(n, 1, &c) || std::fabs(c - 1.41421356f) > 1e-5f || is_constant(n.input(0))) return false;
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
bool Importer::decomposed_layer_norm(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  auto last_axis = [&](const onnx::NodeProto& r) {
    const Dims axes = ints_attr(r, "axes", {});
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == static_cast<int64_t>(d.size()) - 1) &&
           int_attr(r, "keepdims", 1) == 1;
  };
  if (d.empty() || is_constant(n.input(0)) || !last_axis(n)) return false;
  const onnx::NodeProto* centre = sole_reader(n.output(0));
  if (centre == nullptr || centre->op_type() != "Sub" || centre->input(0) != n.input(0)) return false;
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
  if (pow == nullptr || divide == nullptr || pow->input(0) != centre->output(0) || !scalar(*pow, 1, &two) || two != 2.0f) {
    return false;
  }
  const onnx::NodeProto* variance = sole_reader(pow->output(0));
  if (variance == nullptr || variance->op_type() != "ReduceMean" || !last_axis(*variance)) return false;
  const onnx::NodeProto* plus = sole_reader(variance->output(0));
  if (plus == nullptr || plus->op_type() != "Add" || plus->input(0) != variance->output(0) || !scalar(*plus, 1, &eps)) {
    return false;
  }
  const onnx::NodeProto* root = sole_reader(plus->output(0));
  if (root == nullptr || root->op_type() != "Sqrt" || divide->input(1) != root->output(0)) return false;
  const onnx::NodeProto* times = sole_reader(divide->output(0));
  if (times == nullptr || times->op_type() != "Mul" || times->input(0) != divide->output(0)) return false;
  const onnx::NodeProto* shift = sole_reader(times->output(0));
  if (shift == nullptr || shift->op_type() != "Add" || shift->input(0) != times->output(0)) return false;
  const Dims h{d.back()};
  if (!is_constant(times->input(1)) || constants_.at(times->input(1)).dims != h || !is_constant(shift->input(1)) ||
      constants_.at(shift->input(1)).dims != h) {
    return false;
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(*times, 1, Role::kParam), beta = adopt(*shift, 1, Role::kParam);
  tensors_[shift->output(0)] = b_.layer_norm_with(x, gamma, beta, out_.graph.unique_name(shift->output(0)), eps);
  done_.insert({centre, pow, variance, plus, root, divide, times, shift});
  return true;
}

void Importer::layer_norm(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const int64_t axis = int_attr(n, "axis", -1);
  if (axis != -1 && axis != static_cast<int64_t>(d.size()) - 1) unsupported(n, "LayerNormalization over the last axis only");
  for (int k = 1; k < n.output_size(); ++k) {
    if (!n.output(k).empty() && readers_.count(n.output(k))) unsupported(n, "its mean or inverse deviation output is read");
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(n, 1, Role::kParam);
  if (n.input_size() < 3 || n.input(2).empty()) unsupported(n, "LayerNormalization without a bias");
  const int beta = adopt(n, 2, Role::kParam);
  define(n, 0, b_.layer_norm_with(x, gamma, beta, out_.graph.unique_name(n.output(0)), float_attr(n, "epsilon", 1e-5f)));
}

void Importer::split(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (axis < 0 || axis >= static_cast<int64_t>(d.size())) unsupported(n, "axis outside the input's rank");
  Dims sizes;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    sizes.assign(int_constant(n, 1).i.begin(), int_constant(n, 1).i.end());
    bounded(n, sizes, 1, "split size");
  } else {
    const int64_t parts = n.output_size();
    if (d[static_cast<size_t>(axis)] % parts != 0) unsupported(n, "an axis that does not split evenly");
    sizes.assign(static_cast<size_t>(parts), d[static_cast<size_t>(axis)] / parts);
  }
  if (static_cast<int>(sizes.size()) != n.output_size()) unsupported(n, "split sizes do not match the outputs");
  const int x = tensor(n, 0);
  int64_t offset = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    Dims out = d;
    out[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(k)];
    const int y = fresh(n.output(k), out);
    out_.graph.add_op(OpCode::kSlice, {x}, {y}, {axis, offset});
    define(n, k, y);
    offset += sizes[static_cast<size_t>(k)];
  }
  if (offset != d[static_cast<size_t>(axis)]) unsupported(n, "split sizes do not add up to the axis");
}

void Importer::slice(const onnx::NodeProto& n) {
  Dims d = shape_of(n.input(0));
  const Constant& starts = int_constant(n, 1);
  const Constant& ends = int_constant(n, 2);
  Dims axes;
  if (n.input_size() > 3 && !n.input(3).empty()) {
    axes.assign(int_constant(n, 3).i.begin(), int_constant(n, 3).i.end());
  } else {
    for (size_t k = 0; k < starts.i.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (n.input_size() > 4 && !n.input(4).empty()) {
    for (int64_t step : int_constant(n, 4).i) {
      if (step != 1) unsupported(n, "steps other than 1");
    }
  }
  if (starts.i.size() != axes.size() || ends.i.size() != axes.size()) {
    unsupported(n, "starts, ends and axes of different lengths");
  }
  int x = tensor(n, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(d.size()) : axes[k];
    if (axis < 0 || axis >= static_cast<int64_t>(d.size())) unsupported(n, "an axis outside the input's rank");
    const int64_t dim = d[static_cast<size_t>(axis)];
    auto clamp = [dim](int64_t v) { return v < 0 ? std::max<int64_t>(0, v + dim) : std::min(v, dim); };
    const int64_t begin = clamp(starts.i[k]), end = clamp(ends.i[k]);
    if (end <= begin) unsupported(n, "an empty slice");
    if (begin == 0 && end == dim) continue;
    d[static_cast<size_t>(axis)] = end - begin;
    const int y = fresh(n.output(0), d);
    out_.graph.add_op(OpCode::kSlice, {x}, {y}, {axis, begin});
    x = y;
  }
  define(n, 0, x);
}

// F.cross_entropy as torch exports it: the graph's loss, its labels a graph input that becomes
// the plan's label binding.
void Importer::cross_entropy_loss(const onnx::NodeProto& n) {
  const Dims scores = shape_of(n.input(0));
  const std::string reduction = attribute(n, "reduction") ? attribute(n, "reduction")->s() : "mean";
  if (reduction != "mean") unsupported(n, "reduction '" + reduction + "' (remat's loss is the mean)");
  if (n.input_size() > 2 && !n.input(2).empty()) unsupported(n, "class weights");
  if (scores.size() != 2) unsupported(n, "scores must be [batch, classes]");
  if (n.output_size() > 1 && !n.output(1).empty() && readers_.count(n.output(1)) != 0) {
    unsupported(n, "its log-probability output is read");
  }
  if (out_.graph.loss >= 0) unsupported(n, "a second loss");
  const int scores_tensor = tensor(n, 0);
  const int labels = tensor(n, 1);
  Tensor& l = out_.graph.tensors[labels];
  std::vector<int>& inputs = out_.graph.inputs;
  const auto bound = std::find(inputs.begin(), inputs.end(), labels);
  if (bound == inputs.end() || l.dtype != REMAT_DTYPE_I32 || l.shape != Dims{scores[0]}) {
    unsupported(n, "labels must be an integer graph input [batch]");
  }
  // The input binding becomes the label binding.
  inputs.erase(bound);
  l.role = Role::kLabel;
  out_.graph.labels.push_back(labels);
  define(n, 0, b_.softmax_cross_entropy(scores_tensor, labels));
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
  if (n.output_size() > 1 && !n.output(1).empty() && readers_.count(n.output(1))) {
    unsupported(n, "Dropout's mask output is read");
  }
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
  if (out_.graph.loss >= 0) {  // the model's own loss node
    if (it->second != out_.graph.loss) {
      throw CompileError(path_ + ": output '" + name + "' is not the loss the model computes");
    }
    if (loss != OnnxLoss::kNone) {
      throw CompileError(path_ + ": the model computes its own loss ('" + name + "'); compile it without --loss");
    }
    return;
  }
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
      } else if (dim.has_dim_value()) {
        if (dim.dim_value() < 1 || dim.dim_value() > kMaxDim) {
          throw CompileError(path_ + ": input '" + in.name() + "' axis " + std::to_string(k) + " is " +
                             std::to_string(dim.dim_value()) + " (1 to 2^31)");
        }
        dims.push_back(dim.dim_value());
      } else {
        throw CompileError(path_ + ": input '" + in.name() + "' has a dynamic axis " + std::to_string(k) +
                           " ('" + dim.dim_param() + "'); only the batch axis may be dynamic");
      }
    }
    if (dims.empty()) throw CompileError(path_ + ": input '" + in.name() + "' is a scalar; inputs have a batch axis");
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 40)) {
        throw CompileError(path_ + ": input '" + in.name() + "' " + dims_text(dims) + " holds more than 2^40 elements");
      }
    }
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
  for (int k = 0; k < g.node_size(); ++k) {
    for (const std::string& in : g.node(k).input()) {
      if (!in.empty()) readers_[in].push_back(k);
    }
  }
  // Constant nodes first: a pattern (gelu) looks ahead at constants defined after its first node.
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      fold(n);
      done_.insert(&n);
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
  return import_onnx_bytes(bytes.str(), path, batch, loss);
}

OnnxImport import_onnx_bytes(const std::string& bytes, const std::string& path, int64_t batch, OnnxLoss loss) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) throw CompileError(path + ": not an ONNX model (its protobuf does not parse)");
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
