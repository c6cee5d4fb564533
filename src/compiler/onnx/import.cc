// The ONNX importer of onnx/import.h, over Debian's libonnx (ModelProto, the checker): the
// importer's values, messages and node dispatch (onnx/importer.h), and the entry points.
#include <onnx/checker.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {
namespace {

// Opsets whose operators the importer was written against.
constexpr int64_t kOldestOpset = 13;
constexpr int64_t kNewestOpset = 17;

}  // namespace

const Constant& OnnxImporter::constant(const onnx::NodeProto& n, int input) const {
  const auto it = input < n.input_size() ? constants_.find(n.input(input)) : constants_.end();
  if (it == constants_.end())
    unsupported(n, "input " + std::to_string(input) + " must be a constant (an initializer)");
  return it->second;
}

const Constant& OnnxImporter::int_constant(const onnx::NodeProto& n, int input) const {
  const Constant& c = constant(n, input);
  if (c.type != onnx::TensorProto_DataType_INT64)
    unsupported(n, "input " + std::to_string(input) + " must be integers");
  return c;
}

void OnnxImporter::bounded(const onnx::NodeProto& n, const Dims& values, int64_t lo,
                           const char* what, int hi_log2) const {
  for (int64_t v : values) {
    if (v < lo || v > (int64_t{1} << hi_log2)) {
      unsupported(n, std::string(what) + " " + std::to_string(v) + " outside [" +
                         std::to_string(lo) + ", 2^" + std::to_string(hi_log2) + "]");
    }
  }
}

int OnnxImporter::tensor(const onnx::NodeProto& n, int input) {
  if (input >= n.input_size() || n.input(input).empty())
    unsupported(n, "input " + std::to_string(input) + " is missing");
  const std::string& name = n.input(input);
  if (tensors_.count(name) == 0 && swapped_.count(name) != 0) return unswap(name);
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    if (is_boolean(name)) {
      unsupported(n, "input '" + name +
                         "' is a boolean; remat reads booleans only through Where picking "
                         "numbers or a Cast to FLOAT");
    }
    if (is_constant(name))
      unsupported(n, "input '" + name + "' is a constant where remat needs a computed tensor");
    unsupported(n, "input '" + name + "' is produced by no node before it");
  }
  const auto view = logical_.find(name);
  if (view == logical_.end() || view->second == out_.graph.tensors[it->second].shape)
    return it->second;
  // A value held with fewer dims than ONNX gives it (global average pooling's [N, C] for [N, C,
  // 1, 1]): a node that reads it whole gets a copy of the ONNX shape.
  const int copy = fresh(name, view->second);
  out_.graph.add_op(OpCode::kCopy, {it->second}, {copy});
  tensors_[name] = copy;
  logical_.erase(view);
  return copy;
}

Dims OnnxImporter::shape_of(const std::string& name) const {
  const auto view = logical_.find(name);
  if (view != logical_.end()) return view->second;
  const auto it = tensors_.find(name);
  if (it != tensors_.end()) return out_.graph.tensors[it->second].shape;
  const auto b = booleans_.find(name);
  if (b != booleans_.end()) return b->second.dims;
  const auto c = constants_.find(name);
  return c != constants_.end() ? c->second.dims : Dims{};
}

int OnnxImporter::adopt(const onnx::NodeProto& n, int input, Role role) {
  constant(n, input);  // names what is wrong
  return adopt_named(n, n.input(input), role);
}

int OnnxImporter::fresh(const std::string& hint, const Dims& shape, remat_dtype dtype) {
  return out_.graph.add_tensor(out_.graph.unique_name(hint), dtype, shape, Role::kActivation);
}

int OnnxImporter::scaled(int x, float alpha, const std::string& hint) {
  const int y = fresh(hint, out_.graph.tensors[x].shape);
  out_.graph.add_op(OpCode::kScale, {x}, {y}, {}, named({{attr::scale::alpha, alpha}}));
  return y;
}

bool OnnxImporter::scalar(const onnx::NodeProto& n, int input, float* value) const {
  const auto it = input < n.input_size() ? constants_.find(n.input(input)) : constants_.end();
  if (it == constants_.end() || it->second.numel() != 1) return false;
  *value = it->second.type == onnx::TensorProto_DataType_FLOAT
               ? it->second.f[0]
               : static_cast<float>(it->second.i[0]);
  return true;
}

const onnx::NodeProto* OnnxImporter::producer_of(const std::string& name) const {
  const auto it = producers_.find(name);
  return it == producers_.end() ? nullptr : &model_.graph().node(it->second);
}

const onnx::NodeProto* OnnxImporter::sole_reader(const std::string& name) const {
  const auto it = readers_.find(name);
  if (it == readers_.end() || it->second.size() != 1) return nullptr;
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    if (out.name() == name) return nullptr;  // the graph's output is read outside too
  }
  return &model_.graph().node(it->second[0]);
}

int OnnxImporter::adopt_named(const onnx::NodeProto& n, const std::string& name, Role role) {
  const auto found = constants_.find(name);
  if (found == constants_.end())
    unsupported(n, "'" + name + "' must be an initializer (a parameter)");
  const Constant& c = found->second;
  if (c.type != onnx::TensorProto_DataType_FLOAT || c.initializer.empty()) {
    unsupported(n, "input '" + name + "' must be a float initializer (a parameter)");
  }
  // An Identity (or a float Cast) of an initializer is that initializer (onnx/folding.cc): one
  // parameter, so weights tied that way stay tied and train.
  if (c.initializer != name) return adopt_named(n, c.initializer, role);
  const auto it = adopted_.find(name);
  if (it != adopted_.end()) return it->second;
  if (c.dims.empty())
    unsupported(n, "parameter '" + name + "' is a scalar; remat parameters have at least one dim");
  const int t =
      carried(name, REMAT_DTYPE_F32, c.dims, role, c.f.data(), c.f.size() * sizeof(float));
  if (role == Role::kParam) out_.graph.params.push_back(t);
  adopted_[name] = t;
  // torch.onnx.export names initializers after the state_dict, except those it made itself (a
  // transposed MatMul weight, a batch norm folded into a convolution): "onnx::MatMul_123".
  if (name.compare(0, 6, "onnx::") == 0) {
    out_.warnings.push_back(
        "parameter '" + name + "' (" + n.op_type() + " node " + name_of(n) +
        ") has no state_dict name: the export renamed or folded it, so --load-params must "
        "give it under this name");
  }
  return t;
}

int OnnxImporter::carried(const std::string& name, remat_dtype dtype, const Dims& dims, Role role,
                          const void* bytes, size_t size) {
  const int t = out_.graph.add_tensor(name, dtype, dims, role, Init::kData);
  const uint8_t* from = static_cast<const uint8_t*>(bytes);
  out_.graph.tensors[t].init_data.assign(from, from + size);
  return t;
}

void OnnxImporter::alias(const onnx::NodeProto& n) {
  if (is_boolean(n.input(0))) return boolean_view(n, shape_of(n.input(0)), false, false);
  tensor(n, 0);  // names what is wrong
  tensors_[n.output(0)] = tensors_[n.input(0)];
  if (logical_.count(n.input(0))) logical_[n.output(0)] = logical_[n.input(0)];
}

void OnnxImporter::define(const onnx::NodeProto& n, int output, int tensor, Dims logical) {
  const std::string& name = n.output(output);
  tensors_[name] = tensor;
  if (!logical.empty()) logical_[name] = logical;
}

void OnnxImporter::define_constant(const onnx::NodeProto& n, int output, Constant c) {
  c.initializer.clear();
  constants_[n.output(output)] = std::move(c);
}

const onnx::AttributeProto* OnnxImporter::attribute(const onnx::NodeProto& n,
                                                    const char* name) const {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t OnnxImporter::int_attr(const onnx::NodeProto& n, const char* name, int64_t fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? a->i() : fallback;
}

float OnnxImporter::float_attr(const onnx::NodeProto& n, const char* name, float fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? a->f() : fallback;
}

Dims OnnxImporter::ints_attr(const onnx::NodeProto& n, const char* name, Dims fallback) const {
  const onnx::AttributeProto* a = attribute(n, name);
  return a != nullptr ? Dims(a->ints().begin(), a->ints().end()) : fallback;
}

std::string OnnxImporter::name_of(const onnx::NodeProto& n) const {
  return "'" +
         (n.name().empty() ? n.output_size() > 0 ? n.output(0) : std::string("?") : n.name()) + "'";
}

void OnnxImporter::unsupported(const onnx::NodeProto& n, const std::string& why) const {
  std::string inputs;
  for (int k = 0; k < n.input_size(); ++k) {
    inputs +=
        (k ? ", " : "") + (n.input(k).empty() ? std::string("(none)")
                                              : n.input(k) + " " + dims_text(shape_of(n.input(k))));
  }
  throw CompileError(path_ + ": node " + name_of(n) + " (" + n.op_type() + ", opset " +
                     std::to_string(opset_) + ") with inputs " + inputs + ": " + why);
}

// ---- nodes ---------------------------------------------------------------------------------

void OnnxImporter::node(const onnx::NodeProto& n) {
  // An attention's nodes wait for its last one, where its k and v exist (onnx/attention.cc).
  const auto held = deferred_.find(&n);
  if (held != deferred_.end()) {
    if (&model_.graph().node(attentions_[held->second].nodes.back()) == &n) attention(n);
    return;
  }
  // A Transpose of a held-back head split, read by Shape alone (onnx/attention.cc).
  if (n.op_type() == "Transpose" && n.input_size() == 1 && tensors_.count(n.input(0)) == 0 &&
      swapped_.count(n.input(0)) == 0 && !is_constant(n.input(0)) && !is_boolean(n.input(0)) &&
      shape_only(n.output(0))) {
    return shape_of_transpose(n);
  }
  // A refusal from the builder or the op checks names the op and tensors but not the node: add it.
  try {
    import_node(n);
  } catch (const CompileError& e) {
    const std::string what = e.what();
    if (what.compare(0, path_.size(), path_) == 0) throw;  // unsupported() named it already
    unsupported(n, what);
  }
}

void OnnxImporter::import_node(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    unsupported(n, "domain '" + n.domain() + "' is not ONNX's");
  const std::string& op = n.op_type();
  bool all_constant = n.input_size() > 0;
  for (const std::string& in : n.input()) all_constant &= in.empty() || is_constant(in);
  if (done_.count(&n) != 0) return;  // a Constant, or imported with a pattern (gelu)
  // Rows of a parameter table at constant ids are computed, not folded: the table trains.
  const bool table = op == "Gather" && is_constant(n.input(0)) &&
                     constants_.at(n.input(0)).type == onnx::TensorProto_DataType_FLOAT;
  if (table) return gather(n);
  // A node of constants folds (onnx/folding.cc), but where it reads a float initializer that
  // may train (one with dims, as operand() takes it): its layer imports it.
  bool reads_parameter = false;
  for (const std::string& in : n.input()) {
    const auto c = in.empty() ? constants_.end() : constants_.find(in);
    reads_parameter |= c != constants_.end() &&
                       c->second.type == onnx::TensorProto_DataType_FLOAT &&
                       !c->second.initializer.empty() && !c->second.dims.empty();
  }
  if (op == "Constant" || op == "Shape" || op == "Size" ||
      (all_constant && op != "Dropout" && (!reads_parameter || op == "Identity" || op == "Cast")))
    return fold(n);
  if (op == "Transpose") return transpose(n);
  if (op == "Where") return where(n);
  if (op == "Expand") return expand_node(n);
  if (op == "Not") {
    if (!is_boolean(n.input(0))) unsupported(n, "Not of a value that is not a boolean");
    return boolean_view(n, shape_of(n.input(0)), false, true);
  }
  if (op == "Gather") return gather(n);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return arithmetic(n);
  if (op == "Pow" || op == "Sqrt" || op == "LeakyRelu" || op == "Erf" || op == "LogSoftmax" ||
      op == "Cast" || op == "Clip" || op == "HardSigmoid" || op == "HardSwish") {
    return math(n);
  }
  if (op == "LayerNormalization") return layer_norm(n);
  if (op == "ReduceMean" || op == "ReduceSum") return reduce(n);
  if (op == "Split") return split(n);
  if (op == "Slice") return slice(n);
  if (op == "Squeeze" || op == "Unsqueeze") return squeeze(n);
  if (op == "Gemm") return gemm(n);
  if (op == "MatMul") return matmul(n);
  if (op == "Conv") return conv(n);
  if (op == "BatchNormalization") return batch_norm(n);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool") return pool(n);
  if (op == "Concat") return concat(n);
  if (op == "Pad") return pad(n);
  if (op == "Dropout") return dropout(n);
  if (op == "SoftmaxCrossEntropyLoss") return cross_entropy_loss(n);
  if (op == "Neg") return define(n, 0, scaled(tensor(n, 0), -1.0f, n.output(0)));
  if (op == "Identity") return alias(n);
  if (op == "Relu" || op == "Tanh" || op == "Sigmoid") {
    const int x = tensor(n, 0);
    const std::string name = out_.graph.unique_name(n.output(0));
    return define(n, 0,
                  op == "Relu"   ? b_.relu(x, name)
                  : op == "Tanh" ? b_.tanh(x, name)
                                 : b_.sigmoid(x, name));
  }
  if (op == "Softmax") {
    const Dims d = shape_of(n.input(0));
    const int64_t axis = int_attr(n, "axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(d.size()) - 1)
      unsupported(n, "softmax over an axis but the last");
    return define(n, 0, b_.softmax(tensor(n, 0), out_.graph.unique_name(n.output(0))));
  }
  if (op == "Flatten") {
    const Dims d = shape_of(n.input(0));
    int64_t axis = int_attr(n, "axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(d.size());
    if (axis < 0 || axis > static_cast<int64_t>(d.size()))
      unsupported(n, "axis outside the input's rank");
    return view_as(
        n, {product(d, 0, static_cast<size_t>(axis)), product(d, static_cast<size_t>(axis))});
  }
  if (op == "Reshape") return reshape(n);
  unsupported(n, "remat does not import this op (docs/onnx.md lists what it does)");
}

void OnnxImporter::attach_loss(OnnxLoss loss) {
  const onnx::GraphProto& g = model_.graph();
  if (g.output_size() != 1) {
    throw CompileError(path_ + ": the graph has " + std::to_string(g.output_size()) +
                       " outputs; remat trains a model with one output and attaches --loss to it");
  }
  const std::string& name = g.output(0).name();
  if (tensors_.count(name) == 0 && swapped_.count(name) != 0) unswap(name);
  const auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw CompileError(path_ + ": output '" + name + "' is a constant, or produced by no node");
  const Dims d = shape_of(name);
  if (out_.graph.loss >= 0) {  // the model's own loss node
    if (it->second != out_.graph.loss) {
      throw CompileError(path_ + ": output '" + name + "' is not the loss the model computes");
    }
    if (loss != OnnxLoss::kNone) {
      throw CompileError(path_ + ": the model computes its own loss ('" + name +
                         "'); compile it without --loss");
    }
    return;
  }
  const int y = it->second;
  const Tensor& out = out_.graph.tensors[y];
  if (loss == OnnxLoss::kNone && product(out.shape) == 1 && out.dtype == REMAT_DTYPE_F32 &&
      out.role == Role::kActivation) {
    // A scalar output is a loss the model computes with ordinary ops (a mean of squares).
    out_.graph.tensors[y].role = Role::kLoss;
    out_.graph.loss = y;
    return;
  }
  if (loss == OnnxLoss::kNone) {
    throw CompileError(path_ + ": output '" + name + "' " + dims_text(d) +
                       " is not a loss (a scalar); give --loss cross_entropy or --loss mse");
  }
  const Dims held = out_.graph.tensors[y].shape;
  if (loss == OnnxLoss::kCrossEntropy) {
    if (held.size() != 2) {
      throw CompileError(path_ + ": --loss cross_entropy needs an output [batch, classes]; '" +
                         name + "' is " + dims_text(d));
    }
    b_.softmax_cross_entropy(y, b_.label("labels", REMAT_DTYPE_I32, {held[0]}));
  } else {
    b_.mse(y, b_.label("labels", REMAT_DTYPE_F32, held));
  }
}

OnnxImport OnnxImporter::run(OnnxLoss loss) {
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
                             std::to_string(dim.dim_value()) + ", and --batch is " +
                             std::to_string(batch_) +
                             " (export with a dynamic batch axis, or compile with --batch " +
                             std::to_string(dim.dim_value()) + ")");
        }
        dims.push_back(batch_);
      } else if (dim.has_dim_value()) {
        if (dim.dim_value() < 1 || dim.dim_value() > kMaxDim) {
          throw CompileError(path_ + ": input '" + in.name() + "' axis " + std::to_string(k) +
                             " is " + std::to_string(dim.dim_value()) + " (1 to 2^31)");
        }
        dims.push_back(dim.dim_value());
      } else {
        throw CompileError(path_ + ": input '" + in.name() + "' has a dynamic axis " +
                           std::to_string(k) + " ('" + dim.dim_param() +
                           "'); only the batch axis may be dynamic");
      }
    }
    if (dims.empty())
      throw CompileError(path_ + ": input '" + in.name() +
                         "' is a scalar; inputs have a batch axis");
    int64_t elements = 1;
    for (int64_t d : dims) {
      if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 40)) {
        throw CompileError(path_ + ": input '" + in.name() + "' " + dims_text(dims) +
                           " holds more than 2^40 elements");
      }
    }
    const int32_t type_id = type.elem_type();
    if (type_id == onnx::TensorProto_DataType_FLOAT) {
      tensors_[in.name()] = b_.input(in.name(), REMAT_DTYPE_F32, dims);
    } else if (type_id == onnx::TensorProto_DataType_INT64 ||
               type_id == onnx::TensorProto_DataType_INT32) {
      tensors_[in.name()] = b_.input(in.name(), REMAT_DTYPE_I32, dims);
    } else if (type_id == onnx::TensorProto_DataType_BOOL) {
      // A mask: i32 0s and 1s (onnx/masks.cc).
      tensors_[in.name()] = b_.input(in.name(), REMAT_DTYPE_I32, dims);
      booleans_[in.name()] = BoolValue{tensors_[in.name()], {}, dims, false};
    } else {
      throw CompileError(path_ + ": input '" + in.name() + "' has element type " +
                         onnx::TensorProto_DataType_Name(type_id) +
                         " (remat binds FLOAT, INT64 or INT32 as i32, and BOOL as i32 0 or 1)");
    }
  }
  for (int k = 0; k < g.node_size(); ++k) {
    for (const std::string& in : g.node(k).input()) {
      if (!in.empty()) readers_[in].push_back(k);
    }
    for (const std::string& out : g.node(k).output()) {
      if (!out.empty()) producers_[out] = k;
    }
  }
  // Constant nodes first: a pattern (gelu) looks ahead at constants defined after its first node.
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      fold(n);
      done_.insert(&n);
    }
  }
  if (attention_ == AttentionKernel::kFused) find_attention();
  for (const onnx::NodeProto& n : g.node()) node(n);
  attach_loss(loss);
  return std::move(out_);
}

OnnxImport import_onnx(const std::string& path, int64_t batch, OnnxLoss loss,
                       AttentionKernel attention) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    throw CompileError(path + ": cannot open the model (" + std::strerror(errno) + ")");
  if (!S_ISREG(info.st_mode)) throw CompileError(path + ": not a file");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw CompileError(path + ": cannot open the model (" + std::strerror(errno) + ")");
  // Read into one string of the file's size: a model is mostly weights, copied once here.
  const std::streamoff size = file.tellg();
  std::string bytes(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  file.seekg(0);
  if (size < 0 || !file.read(&bytes[0], static_cast<std::streamsize>(bytes.size()))) {
    throw CompileError(path + ": cannot read the model (" + std::strerror(errno) + ")");
  }
  // Every message names the file, also those of the parts that only see the graph.
  try {
    return import_onnx_bytes(bytes, path, batch, loss, attention);
  } catch (const CompileError& e) {
    const std::string what = e.what();
    if (what.compare(0, path.size() + 1, path + ":") == 0) throw;
    throw CompileError(path + ": " + what);
  }
}

OnnxImport import_onnx_bytes(const std::string& bytes, const std::string& path, int64_t batch,
                             OnnxLoss loss, AttentionKernel attention) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw CompileError(path + ": not an ONNX model (its protobuf does not parse)");
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
  return OnnxImporter(model, path, batch, opset, attention).run(loss);
}

}  // namespace compiler
}  // namespace remat
