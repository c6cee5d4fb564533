// Compiler: the ONNX importer's attention (docs/onnx.md): torch's multi-head attention becomes
// one attention op with --attention fused, and stays the exported ops with unfused or where the
// pattern does not hold.
// libonnx's headers first: they include <iostream>, whose fail() cmocka's macro would rename.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/onnx/import.h"
#include "tests/cmocka_cpp.h"

using remat::OpCode;
using remat::compiler::AttentionKernel;
using remat::compiler::CompileOptions;
using remat::compiler::Graph;
using remat::compiler::Op;
namespace attr = remat::attr;

namespace {

int count(const Graph& g, OpCode code) {
  int n = 0;
  for (const Op& op : g.ops) n += op.code == code ? 1 : 0;
  return n;
}

const Op& first(const Graph& g, OpCode code) {
  for (const Op& op : g.ops) {
    if (op.code == code) return op;
  }
  fail_msg("no op %d", static_cast<int>(code));
  return g.ops[0];
}

// What a synthetic attention over q = k = v = x W ([2, 3, 4], 2 heads of 2) varies.
struct Variant {
  std::string scale = "scores_div";  // scores_div, q_mul, scores_vector (not a number), none
  bool split_k_transpose = false;    // k: (0, 2, 1, 3) then (0, 1, 3, 2)
  std::vector<int64_t> mask;         // the mask's dims (none when empty)
  bool computed_mask = false;        // the mask a graph input, else an initializer
  float dropout = 0.0f;              // a training-mode Dropout of this ratio when above 0
};

class ModelWriter {
 public:
  ModelWriter() {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(17);
    g_ = m_.mutable_graph();
    g_->set_name("attention");
  }

  void input(const std::string& name, const std::vector<int64_t>& dims) {
    value(g_->add_input(), name, dims);
  }
  void output(const std::string& name, const std::vector<int64_t>& dims) {
    value(g_->add_output(), name, dims);
  }
  void floats(const std::string& name, const std::vector<int64_t>& dims, float fill) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t k = 0; k < n; ++k) t->add_float_data(fill * static_cast<float>(k % 5 + 1));
  }
  void ints(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  void boolean(const std::string& name, bool v) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto_DataType_BOOL);
    t->add_int32_data(v ? 1 : 0);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in,
                        const std::string& out) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  }
  void transpose(const std::string& in, const std::string& out, const std::vector<int64_t>& perm) {
    onnx::AttributeProto* a = node("Transpose", {in}, out)->add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t p : perm) a->add_ints(p);
  }
  std::string bytes() const { return m_.SerializeAsString(); }

 private:
  static void value(onnx::ValueInfoProto* v, const std::string& name,
                    const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto_DataType_FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

// The model torch exports for |v|: [2, 3, 4] in and out.
std::string model(const Variant& v) {
  ModelWriter w;
  w.input("x", {2, 3, 4});
  if (!v.mask.empty() && v.computed_mask) w.input("mask", v.mask);
  if (!v.mask.empty() && !v.computed_mask) w.floats("mask", v.mask, -1.0f);
  w.output("y", {2, 3, 4});
  w.floats("W", {4, 4}, 0.1f);
  w.ints("split", {0, 0, 2, 2});
  w.ints("merge", {2, 3, -1});
  w.floats("root", {}, std::sqrt(2.0f));
  w.floats("half", {}, 0.5f);
  w.floats("per_key", {3}, 0.5f);
  w.node("MatMul", {"x", "W"}, "h");
  const char* names[3] = {"q", "k", "v"};
  for (const char* n : names) w.node("Reshape", {"h", "split"}, std::string(n) + "4");
  w.transpose("q4", "qh", {0, 2, 1, 3});
  std::string q = "qh";
  if (v.scale == "q_mul") {
    w.node("Mul", {"qh", "half"}, "qs");
    q = "qs";
  }
  if (v.split_k_transpose) {
    w.transpose("k4", "kh", {0, 2, 1, 3});
    w.transpose("kh", "kt", {0, 1, 3, 2});
  } else {
    w.transpose("k4", "kt", {0, 2, 3, 1});
  }
  w.transpose("v4", "vh", {0, 2, 1, 3});
  w.node("MatMul", {q, "kt"}, "scores");
  std::string s = "scores";
  if (v.scale == "scores_div" || v.scale == "scores_vector") {
    w.node(v.scale == "scores_div" ? "Div" : "Mul",
           {"scores", v.scale == "scores_div" ? "root" : "per_key"}, "scaled");
    s = "scaled";
  }
  if (!v.mask.empty()) {
    w.node("Add", {"mask", s}, "masked");
    s = "masked";
  }
  onnx::NodeProto* softmax = w.node("Softmax", {s}, "probs");
  onnx::AttributeProto* axis = softmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto_AttributeType_INT);
  axis->set_i(-1);
  std::string probs = "probs";
  if (v.dropout > 0.0f) {
    w.floats("ratio", {}, v.dropout);
    w.boolean("training", true);
    w.node("Dropout", {"probs", "ratio", "training"}, "dropped");
    probs = "dropped";
  }
  w.node("MatMul", {probs, "vh"}, "context");
  w.transpose("context", "merged", {0, 2, 1, 3});
  w.node("Reshape", {"merged", "merge"}, "y");
  return w.bytes();
}

// |v|'s model imported with |kernel|, mse against its output.
Graph import(const Variant& v, AttentionKernel kernel) {
  return remat::compiler::import_onnx_bytes(model(v), "attention.onnx", 2,
                                            remat::compiler::OnnxLoss::kMse, kernel)
      .graph;
}

// |v|'s model compiled (autodiff, the plan verifier) with fused attention.
void compiles(const Variant& v) {
  const std::string path = std::string(REMAT_TEST_TMP) + "/attention.onnx";
  std::ofstream(path, std::ios::binary) << model(v);
  CompileOptions o;
  o.model = path;
  o.batch = 2;
  o.loss = "mse";
  assert_int_equal(remat::compiler::compile(o).report.fused_attention_ops, 1);
}

void expect_fused(const Graph& g) {
  assert_int_equal(count(g, OpCode::kAttention), 1);
  assert_int_equal(count(g, OpCode::kPermute), 0);
  assert_int_equal(count(g, OpCode::kSoftmax), 0);
}

void expect_unfused(const Graph& g) {
  assert_int_equal(count(g, OpCode::kAttention), 0);
  assert_int_equal(count(g, OpCode::kSoftmax), 1);
  if (count(g, OpCode::kPermute) < 3) fail_msg("%d permutes", count(g, OpCode::kPermute));
}

remat::compiler::CompileReport compiled(const char* model, AttentionKernel kernel) {
  CompileOptions o;
  o.model = std::string(REMAT_TEST_DATA_DIR) + "/onnx/" + model;
  o.batch = 3;
  o.loss = "cross_entropy";
  o.attention = kernel;
  const remat::compiler::CompileResult r = remat::compiler::compile(o);
  const int permutes = count(r.graph, OpCode::kPermute);
  if ((kernel == AttentionKernel::kFused) != (permutes == 0)) fail_msg("%d permutes", permutes);
  return r.report;
}

}  // namespace

static void exported_bert_and_gpt_import_one_attention_op_a_layer(void**) {
  for (const char* model : {"bert.onnx", "gpt.onnx"}) {
    assert_int_equal(compiled(model, AttentionKernel::kFused).fused_attention_ops, 2);
    assert_int_equal(compiled(model, AttentionKernel::kUnfused).fused_attention_ops, 0);
  }
}

static void the_scale_is_read_before_or_after_the_product(void**) {
  Variant v;
  const Graph divided = import(v, AttentionKernel::kFused);
  const Op& div = first(divided, OpCode::kAttention);
  assert_float_equal(div.attr(attr::attention::scale), 1.0f / std::sqrt(2.0f), 1e-6f);
  assert_int_equal(div.attr(attr::attention::heads), 2);
  assert_int_equal(div.inputs.size(), 3);
  v.scale = "q_mul";
  v.split_k_transpose = true;
  const Graph g = import(v, AttentionKernel::kFused);
  expect_fused(g);
  assert_float_equal(first(g, OpCode::kAttention).attr(attr::attention::scale), 0.5f, 1e-6f);
  v.scale = "none";
  const Graph unscaled = import(v, AttentionKernel::kFused);
  assert_float_equal(first(unscaled, OpCode::kAttention).attr(attr::attention::scale), 1.0f, 0.0f);
}

static void masks_become_the_ops_sq_sk_or_b_sq_sk(void**) {
  struct Case {
    std::vector<int64_t> dims;
    bool computed;
    std::vector<int64_t> expected;
  } cases[] = {
      {{3, 3}, false, {3, 3}},          // a causal mask buffer
      {{1, 1, 3, 3}, false, {3, 3}},    // the same, unsqueezed
      {{2, 1, 1, 3}, true, {2, 3, 3}},  // a padding mask, broadcast over the queries
      {{2, 1, 3, 3}, true, {2, 3, 3}},  // one per sample
  };
  for (const Case& c : cases) {
    Variant v;
    v.mask = c.dims;
    v.computed_mask = c.computed;
    const Graph g = import(v, AttentionKernel::kFused);
    expect_fused(g);
    const Op& op = first(g, OpCode::kAttention);
    assert_int_equal(op.inputs.size(), 4);
    if (g.tensors[op.inputs[3]].shape != c.expected) fail_msg("mask of rank %zu", c.dims.size());
    compiles(v);
  }
}

static void dropout_in_training_mode_is_the_ops_p(void**) {
  Variant v;
  v.dropout = 0.25f;
  const Graph g = import(v, AttentionKernel::kFused);
  expect_fused(g);
  assert_float_equal(first(g, OpCode::kAttention).attr(attr::attention::p), 0.25f, 0.0f);
  assert_int_equal(count(g, OpCode::kDropout), 0);
  compiles(v);
}

static void what_does_not_match_is_imported_as_before(void**) {
  Variant v;
  v.scale = "scores_vector";  // a scale per key is not a number
  expect_unfused(import(v, AttentionKernel::kFused));
  v = Variant();
  v.mask = {2, 2, 3, 3};  // a mask per head
  v.computed_mask = true;
  expect_unfused(import(v, AttentionKernel::kFused));
  v = Variant();
  v.mask = {3, 3};
  v.dropout = 0.1f;
  expect_unfused(import(v, AttentionKernel::kUnfused));
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exported_bert_and_gpt_import_one_attention_op_a_layer),
      cmocka_unit_test(the_scale_is_read_before_or_after_the_product),
      cmocka_unit_test(masks_become_the_ops_sq_sk_or_b_sq_sk),
      cmocka_unit_test(dropout_in_training_mode_is_the_ops_p),
      cmocka_unit_test(what_does_not_match_is_imported_as_before),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
