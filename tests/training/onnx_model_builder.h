// Hand-built ONNX models for the importer's tests, with ONNX's protobuf classes: a graph of
// opset 17 over one float input x, its nodes and initializers added one at a time.
#ifndef REMAT_TESTS_TRAINING_ONNX_MODEL_BUILDER_H_
#define REMAT_TESTS_TRAINING_ONNX_MODEL_BUILDER_H_

#include <onnx/onnx_pb.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace remat_test {

/// A model of opset 17 whose graph takes x FLOAT [batch, dims...] and has |nodes| (the last
/// writes "y", the graph's output) and |initializers|.
struct ModelBuilder {
  onnx::ModelProto model;
  onnx::GraphProto* graph;

  std::string path;  ///< Where compile() writes the model; messages begin with it.

  explicit ModelBuilder(const std::vector<int64_t>& dims,
                        const std::string& file = "/tmp/remat_test_malformed.onnx")
      : path(file) {
    model.set_ir_version(8);
    onnx::OperatorSetIdProto* set = model.add_opset_import();
    set->set_domain("");
    set->set_version(17);
    graph = model.mutable_graph();
    graph->set_name("malformed");
    onnx::ValueInfoProto* x = graph->add_input();
    x->set_name("x");
    onnx::TypeProto_Tensor* type = x->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    type->mutable_shape()->add_dim()->set_dim_param("batch");
    for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
    onnx::ValueInfoProto* y = graph->add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    y->mutable_type()->mutable_tensor_type()->mutable_shape();
  }

  /// Adds graph input |name| of element type |type| (an onnx::TensorProto_DataType) and shape
  /// [batch, dims...].
  void input(const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
    onnx::ValueInfoProto* in = graph->add_input();
    in->set_name(name);
    onnx::TypeProto_Tensor* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  /// Adds a node |op| (named "/op") reading |in| and writing |out|.
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                        const std::string& out) {
    onnx::NodeProto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name("/" + op);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }

  /// Adds attribute |name| of |values| to |n|.
  static void ints(onnx::NodeProto* n, const std::string& name,
                   const std::vector<int64_t>& values) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t v : values) a->add_ints(v);
  }

  /// An INT64 initializer.
  void int64s(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }

  /// Adds integer attribute |name| to |n|.
  static void int_attr(onnx::NodeProto* n, const std::string& name, int64_t value) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(value);
  }

  /// A FLOAT initializer of |dims| whose first |count| values are 0.5.
  void floats(const std::string& name, const std::vector<int64_t>& dims, size_t count) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (size_t k = 0; k < count; ++k) t->add_float_data(0.5f);
  }

  /// A FLOAT initializer of |dims| holding |values|.
  void floats(const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<float>& values) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }

  /// A Constant node of float |values| and |dims| named |name| (not an initializer).
  void float_constant(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<float>& values) {
    onnx::NodeProto* n = node("Constant", {}, name);
    n->set_name("/Constant_" + name);
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    onnx::TensorProto* t = a->mutable_t();
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }

  /// Writes the model to |path|.
  void save() const {
    std::ofstream file(path, std::ios::binary);
    model.SerializeToOstream(&file);
  }

  /// Compiles this model with an MSE loss; the CompileError's message in |error| ("" when it
  // compiled).
  remat::compiler::CompileResult compile(std::string* error) const {
    {
      std::ofstream file(path, std::ios::binary);
      model.SerializeToOstream(&file);
    }
    remat::compiler::CompileOptions o;
    o.model = path;
    o.batch = 2;
    o.loss = "mse";
    remat::compiler::CompileResult r;
    error->clear();
    try {
      r = remat::compiler::compile(o);
    } catch (const remat::compiler::CompileError& e) {
      *error = e.what();
    }
    std::remove(path.c_str());
    return r;
  }

  /// The CompileError's message of compiling this model ("" when it compiled).
  std::string error() const {
    std::string message;
    compile(&message);
    return message;
  }
};

}  // namespace remat_test

#endif  // REMAT_TESTS_TRAINING_ONNX_MODEL_BUILDER_H_
