// The ONNX importer's constant folding (src/compiler/onnx/folding.cc): each case builds a chain of
// nodes over constants, flattens its result, casts it to float and adds it to x, so the plan
// carries the folded values as a constant tensor; the test reads them and compares with the
// values the ONNX operator specification gives for the same inputs (worked out by hand in each
// case's comment). Then the shape arithmetic torch exports for an attention's scale, a float
// initializer that may train left unfolded, and folds that must be refused, each naming its node.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cmocka_cpp.h"
#include "tests/training/onnx_model_builder.h"

namespace {

using remat_test::ModelBuilder;

constexpr const char* kFile = "/tmp/remat_test_folding.onnx";

// A model over x [batch, |width|] whose nodes the caller adds, ending in value "folded".
struct FoldCase {
  ModelBuilder m;
  explicit FoldCase(int64_t width) : m({width}, kFile) {}

  // Compiles the case with "folded" flattened, cast to float and added to x; returns the values
  // the plan carries for it.
  std::vector<float> values() {
    m.int64s("flat_shape", {1}, {-1});
    m.node("Reshape", {"folded", "flat_shape"}, "flat");
    ModelBuilder::int_attr(m.node("Cast", {"flat"}, "as_float"), "to",
                           onnx::TensorProto_DataType_FLOAT);
    m.node("Add", {"x", "as_float"}, "y");
    std::string error;
    const remat::compiler::CompileResult r = m.compile(&error);
    if (!error.empty()) fail_msg("%s", error.c_str());
    for (const remat::compiler::Tensor& t : r.graph.tensors) {
      if (t.name != "as_float") continue;
      std::vector<float> v(t.init_data.size() / 4);
      std::memcpy(v.data(), t.init_data.data(), v.size() * 4);
      return v;
    }
    fail_msg("the plan carries no constant 'as_float'");
    return {};
  }

  void expect(const char* what, const std::vector<float>& want) {
    const std::vector<float> got = values();
    bool same = got.size() == want.size();
    for (size_t k = 0; same && k < got.size(); ++k) same = got[k] == want[k];
    if (!same) {
      std::string text;
      for (float v : got) text += std::to_string(v) + " ";
      fail_msg("%s: folded to [ %s], not the specification's", what, text.c_str());
    }
  }
};

void expect_error(const ModelBuilder& m, const std::vector<const char*>& needles) {
  const std::string message = m.error();
  if (message.empty()) fail_msg("a model that cannot fold compiled");
  for (const char* needle : needles) {
    if (message.find(needle) == std::string::npos)
      fail_msg("message '%s' does not mention '%s'", message.c_str(), needle);
  }
}

void gather_slice_transpose_and_concat_fold_as_onnx_defines(void**) {
  {  // Gather axis 1 of [[1, 2, 3], [4, 5, 6]] at [2, 0]: [[3, 1], [6, 4]]
    FoldCase c(4);
    c.m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    c.m.int64s("index", {2}, {2, 0});
    ModelBuilder::int_attr(c.m.node("Gather", {"data", "index"}, "folded"), "axis", 1);
    c.expect("Gather axis 1", {3, 1, 6, 4});
  }
  {  // Slice of 0..9 from 8 back to 1 by -3: 8, 5, 2
    FoldCase c(3);
    c.m.int64s("data", {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    c.m.int64s("starts", {1}, {8});
    c.m.int64s("ends", {1}, {1});
    c.m.int64s("axes", {1}, {0});
    c.m.int64s("steps", {1}, {-3});
    c.m.node("Slice", {"data", "starts", "ends", "axes", "steps"}, "folded");
    c.expect("Slice step -3", {8, 5, 2});
  }
  {  // Slice of a [2, 3] on axis -1 from -2 to INT64_MAX: [[2, 3], [5, 6]]
    FoldCase c(4);
    c.m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    c.m.int64s("starts", {1}, {-2});
    c.m.int64s("ends", {1}, {INT64_MAX});
    c.m.int64s("axes", {1}, {-1});
    c.m.node("Slice", {"data", "starts", "ends", "axes"}, "folded");
    c.expect("Slice axis -1", {2, 3, 5, 6});
  }
  {  // Transpose of [[1, 2, 3], [4, 5, 6]] (perm reversed by default)
    FoldCase c(6);
    c.m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    c.m.node("Transpose", {"data"}, "folded");
    c.expect("Transpose", {1, 4, 2, 5, 3, 6});
  }
  {  // Concat axis 1 of [[1], [2]] and [[3, 4], [5, 6]]: [[1, 3, 4], [2, 5, 6]]
    FoldCase c(6);
    c.m.int64s("a", {2, 1}, {1, 2});
    c.m.int64s("b", {2, 2}, {3, 4, 5, 6});
    ModelBuilder::int_attr(c.m.node("Concat", {"a", "b"}, "folded"), "axis", 1);
    c.expect("Concat axis 1", {1, 3, 4, 2, 5, 6});
  }
  {  // Tile [1, 2] twice: [1, 2, 1, 2]; Expand [[1], [2]] to [2, 3]: [1, 1, 1, 2, 2, 2]
    FoldCase c(4);
    c.m.int64s("data", {2}, {1, 2});
    c.m.int64s("repeats", {1}, {2});
    c.m.node("Tile", {"data", "repeats"}, "folded");
    c.expect("Tile", {1, 2, 1, 2});
    FoldCase e(6);
    e.m.int64s("data", {2, 1}, {1, 2});
    e.m.int64s("shape", {2}, {2, 3});
    e.m.node("Expand", {"data", "shape"}, "folded");
    e.expect("Expand", {1, 1, 1, 2, 2, 2});
  }
}

// Integers past 2^53 stay exact through every fold (a double would round INT64_MAX to 2^63):
// torch's dynamic slices end at INT64_MAX, built with Concat, Gather or Where.
void integers_past_2_to_the_53_fold_exactly(void**) {
  {  // ends [INT64_MAX] made by Where and Concat: Slice of 0..4 from 1 to the end: 1, 2, 3
    FoldCase c(3);
    c.m.int64s("data", {4}, {0, 1, 2, 3});
    c.m.int64s("starts", {1}, {1});
    c.m.int64s("yes", {1}, {1});
    c.m.int64s("big", {1}, {INT64_MAX});
    c.m.int64s("almost", {1}, {INT64_MAX - 1});
    c.m.node("Where", {"yes", "big", "almost"}, "chosen");
    ModelBuilder::int_attr(c.m.node("Concat", {"chosen"}, "ends"), "axis", 0);
    c.m.node("Slice", {"data", "starts", "ends"}, "folded");
    c.expect("Slice to INT64_MAX from Where and Concat", {1, 2, 3});
  }
  {  // Equal(INT64_MAX, INT64_MAX - 1) is false; Pow(1, 10^18) is 1 (and quick); Abs(-2^62)
    FoldCase c(3);
    c.m.int64s("big", {1}, {INT64_MAX});
    c.m.int64s("almost", {1}, {INT64_MAX - 1});
    c.m.node("Equal", {"big", "almost"}, "same");
    c.m.int64s("one", {1}, {1});
    c.m.int64s("huge", {1}, {1000000000000000000});
    c.m.node("Pow", {"one", "huge"}, "power");
    c.m.int64s("minus", {1}, {-(int64_t{1} << 62)});
    c.m.node("Abs", {"minus"}, "magnitude");
    c.m.int64s("quarter", {1}, {int64_t{1} << 60});
    c.m.node("Div", {"magnitude", "quarter"}, "four");
    ModelBuilder::int_attr(c.m.node("Concat", {"same", "power", "four"}, "folded"), "axis", 0);
    c.expect("Equal, Pow and Abs of large integers", {0, 1, 4});
  }
  {  // Slice backwards with starts -20 on 10 elements: ONNX clamps the start to 0, so the
     // slice is [data[0]]
    FoldCase c(1);
    c.m.int64s("data", {10}, {5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
    c.m.int64s("starts", {1}, {-20});
    c.m.int64s("ends", {1}, {INT64_MIN});
    c.m.int64s("axes", {1}, {0});
    c.m.int64s("steps", {1}, {-1});
    c.m.node("Slice", {"data", "starts", "ends", "axes", "steps"}, "folded");
    c.expect("Slice back from a start before the data", {5});
  }
  {  // Cast to INT32 wraps 2^32 + 3 to 3; to FLOAT16 rounds 1 + 2^-12 to 1
    FoldCase c(2);
    c.m.int64s("wide", {1}, {(int64_t{1} << 32) + 3});
    ModelBuilder::int_attr(c.m.node("Cast", {"wide"}, "narrow"), "to",
                           onnx::TensorProto_DataType_INT32);
    c.m.float_constant("fine", {1}, {1.0f + 1.0f / 4096.0f});
    ModelBuilder::int_attr(c.m.node("Cast", {"fine"}, "half"), "to",
                           onnx::TensorProto_DataType_FLOAT16);
    ModelBuilder::int_attr(c.m.node("Cast", {"half"}, "half_as_int"), "to",
                           onnx::TensorProto_DataType_INT64);
    c.m.float_constant("scale", {1}, {4096.0f});
    c.m.node("Mul", {"half", "scale"}, "scaled");
    ModelBuilder::int_attr(c.m.node("Cast", {"scaled"}, "scaled_int"), "to",
                           onnx::TensorProto_DataType_INT64);
    ModelBuilder::int_attr(c.m.node("Concat", {"narrow", "scaled_int"}, "folded"), "axis", 0);
    c.expect("Cast to INT32 and FLOAT16", {3, 4096});
  }
}

void shapes_fold_through_unsqueeze_squeeze_and_reshape(void**) {
  {  // Unsqueeze [2, 3] at axes 0 and -1: dims [1, 2, 3, 1]
    FoldCase c(4);
    c.m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    c.m.int64s("axes", {2}, {0, -1});
    c.m.node("Unsqueeze", {"data", "axes"}, "wide");
    c.m.node("Shape", {"wide"}, "folded");
    c.expect("Shape of Unsqueeze", {1, 2, 3, 1});
  }
  {  // Squeeze without axes drops every dim of 1: [1, 3, 1, 2] -> [3, 2]
    FoldCase c(2);
    c.m.int64s("data", {1, 3, 1, 2}, {1, 2, 3, 4, 5, 6});
    c.m.node("Squeeze", {"data"}, "narrow");
    c.m.node("Shape", {"narrow"}, "folded");
    c.expect("Shape of Squeeze", {3, 2});
  }
  {  // Reshape [2, 3, 2] to [0, -1]: [2, 6]
    FoldCase c(2);
    c.m.int64s("data", {2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    c.m.int64s("shape", {2}, {0, -1});
    c.m.node("Reshape", {"data", "shape"}, "reshaped");
    c.m.node("Shape", {"reshaped"}, "folded");
    c.expect("Shape of Reshape", {2, 6});
  }
  {  // ConstantOfShape [2, 2] of 7: four 7s; Size of it: 4
    FoldCase c(4);
    c.m.int64s("shape", {2}, {2, 2});
    onnx::NodeProto* n = c.m.node("ConstantOfShape", {"shape"}, "folded");
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto_DataType_FLOAT);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_float_data(7.0f);
    c.expect("ConstantOfShape", {7, 7, 7, 7});
  }
}

void arithmetic_comparisons_and_where_fold_as_onnx_defines(void**) {
  {  // Integer Div truncates toward zero; Mod takes the divisor's sign: -7 / 2 = -3,
     // Mod(-7, 3) = 2, Mod(7, -3) = -2
    FoldCase c(3);
    c.m.int64s("a", {3}, {-7, -7, 7});
    c.m.int64s("b", {3}, {2, 3, -3});
    c.m.node("Div", {"a", "b"}, "quotient");
    c.m.node("Mod", {"a", "b"}, "rest");
    c.m.int64s("pick", {3}, {0, 1, 1});
    c.m.int64s("one", {}, {1});
    c.m.node("Equal", {"pick", "one"}, "take_rest");
    c.m.node("Where", {"take_rest", "rest", "quotient"}, "folded");
    c.expect("Div, Mod, Equal and Where", {-3, 2, -2});
  }
  {  // Mod with fmod 1 takes the dividend's sign: fmod(-7, 3) = -1, fmod(7, -3) = 1
    FoldCase c(2);
    c.m.int64s("a", {2}, {-7, 7});
    c.m.int64s("b", {2}, {3, -3});
    ModelBuilder::int_attr(c.m.node("Mod", {"a", "b"}, "folded"), "fmod", 1);
    c.expect("Mod fmod 1", {-1, 1});
  }
  {  // Float Range(0, 1, 0.25), Sqrt, and Pow broadcast over it: (0, .25, .5, .75) ** 2
    FoldCase c(4);
    c.m.float_constant("start", {}, {0.0f});
    c.m.float_constant("limit", {}, {1.0f});
    c.m.float_constant("delta", {}, {0.25f});
    c.m.node("Range", {"start", "limit", "delta"}, "r");
    c.m.float_constant("two", {}, {2.0f});
    c.m.node("Pow", {"r", "two"}, "folded");
    c.expect("Range and Pow", {0.0f, 0.0625f, 0.25f, 0.5625f});
  }
  {  // Cast of floats to int64 truncates: -1.5 -> -1, 2.7 -> 2; ReduceProd of [2, 3, 4]: 24
    FoldCase c(3);
    c.m.float_constant("f", {2}, {-1.5f, 2.7f});
    ModelBuilder::int_attr(c.m.node("Cast", {"f"}, "truncated"), "to",
                           onnx::TensorProto_DataType_INT64);
    c.m.int64s("factors", {3}, {2, 3, 4});
    ModelBuilder::int_attr(c.m.node("ReduceProd", {"factors"}, "product"), "keepdims", 1);
    ModelBuilder::int_attr(c.m.node("Concat", {"truncated", "product"}, "folded"), "axis", 0);
    c.expect("Cast and ReduceProd", {-1, 2, 24});
  }
  {  // Trilu of a 3 x 3 of ones: upper from the first diagonal above, then lower from the main
     // one, of a [2, 2] of twos
    FoldCase c(13);
    c.m.float_constant("ones", {3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1});
    c.m.int64s("above", {}, {1});
    c.m.node("Trilu", {"ones", "above"}, "upper");
    c.m.float_constant("twos", {2, 2}, {2, 2, 2, 2});
    ModelBuilder::int_attr(c.m.node("Trilu", {"twos"}, "lower"), "upper", 0);
    c.m.int64s("rows", {1}, {-1});
    c.m.node("Reshape", {"upper", "rows"}, "upper_flat");
    c.m.node("Reshape", {"lower", "rows"}, "lower_flat");
    ModelBuilder::int_attr(c.m.node("Concat", {"upper_flat", "lower_flat"}, "folded"), "axis", 0);
    c.expect("Trilu", {0, 1, 1, 0, 0, 1, 0, 0, 0, 2, 0, 2, 2});
  }
  {  // A causal mask as exporters build it: Range(3) compared with Unsqueeze'd copies of it,
     // Where(row >= column, 0, -1): [[0, -1, -1], [0, 0, -1], [0, 0, 0]]
    FoldCase c(9);
    c.m.int64s("zero", {}, {0});
    c.m.int64s("three", {}, {3});
    c.m.int64s("one", {}, {1});
    c.m.node("Range", {"zero", "three", "one"}, "i");
    c.m.int64s("axis0", {1}, {0});
    c.m.int64s("axis1", {1}, {1});
    c.m.node("Unsqueeze", {"i", "axis1"}, "rows");     // [3, 1]
    c.m.node("Unsqueeze", {"i", "axis0"}, "columns");  // [1, 3]
    c.m.node("GreaterOrEqual", {"rows", "columns"}, "visible");
    c.m.float_constant("open", {}, {0.0f});
    c.m.float_constant("shut", {}, {-1.0f});
    c.m.node("Where", {"visible", "open", "shut"}, "folded");
    c.expect("causal mask", {0, -1, -1, 0, 0, -1, 0, 0, 0});
  }
}

// The first example: an attention scaled by (D // heads) ** 0.5 with D read from the
// input's shape exports as Shape -> Gather -> Div -> Cast -> Pow; it folds to one scale op.
void an_attention_scale_from_the_input_shape_folds_to_a_number(void**) {
  ModelBuilder m({4, 8}, kFile);
  m.node("Shape", {"x"}, "shape");
  m.int64s("last", {}, {2});
  m.node("Gather", {"shape", "last"}, "hidden");
  m.int64s("heads", {}, {2});
  m.node("Div", {"hidden", "heads"}, "head_dim");
  ModelBuilder::int_attr(m.node("Cast", {"head_dim"}, "head_dim_float"), "to",
                         onnx::TensorProto_DataType_FLOAT);
  m.float_constant("half", {}, {0.5f});
  m.node("Pow", {"head_dim_float", "half"}, "scale");
  m.node("Div", {"x", "scale"}, "y");
  std::string error;
  const remat::compiler::CompileResult r = m.compile(&error);
  if (!error.empty()) fail_msg("%s", error.c_str());
  bool found = false;
  for (const remat::compiler::Op& op : r.graph.ops) {
    if (op.code == remat::OpCode::kScale && !op.fattrs.empty() && op.fattrs[0] == 0.5f)
      found = true;
  }
  if (!found) fail_msg("no scale op by 1 / (8 / 2) ** 0.5 = 0.5 in the plan");
}

// A float initializer with dims may be a parameter: an op reading it is imported, not folded,
// and the initializer trains.
void a_float_initializer_that_may_train_is_not_folded(void**) {
  ModelBuilder m({4}, kFile);
  m.floats("gain", {4}, 4);
  m.float_constant("two", {}, {2.0f});
  m.node("Mul", {"gain", "two"}, "doubled");
  m.node("Mul", {"x", "doubled"}, "y");
  std::string error;
  const remat::compiler::CompileResult r = m.compile(&error);
  if (!error.empty()) fail_msg("%s", error.c_str());
  for (const remat::compiler::Tensor& t : r.graph.tensors) {
    if (t.name == "gain" && t.role == remat::compiler::Role::kParam) return;
  }
  fail_msg("the initializer 'gain' is not a parameter of the plan");
}

// A weight passed through Identity (as exports tie weights) is the same parameter: one tensor,
// which trains, not a frozen copy or a second, untied parameter.
void an_initializer_through_identity_stays_one_parameter(void**) {
  ModelBuilder m({4}, kFile);
  m.floats("gain", {4}, 4);
  m.node("Identity", {"gain"}, "tied");
  m.node("Mul", {"x", "gain"}, "first");
  m.node("Mul", {"x", "tied"}, "second");
  m.node("Add", {"first", "second"}, "y");
  std::string error;
  const remat::compiler::CompileResult r = m.compile(&error);
  if (!error.empty()) fail_msg("%s", error.c_str());
  for (const remat::compiler::Tensor& t : r.graph.tensors) {
    if (t.name == "tied") fail_msg("'tied' is a tensor of its own (a frozen or untied copy)");
  }
  int params = 0;
  for (int t : r.graph.params) {
    if (r.graph.tensors[t].name != "gain")
      fail_msg("parameter '%s'", r.graph.tensors[t].name.c_str());
    ++params;
  }
  if (params != 1) fail_msg("%d parameters, want 'gain' once", params);
}

void folds_that_cannot_be_done_are_refused_naming_the_node(void**) {
  {
    ModelBuilder m({4}, kFile);
    m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    m.int64s("index", {1}, {3});
    ModelBuilder::int_attr(m.node("Gather", {"data", "index"}, "g"), "axis", 1);
    m.node("Reshape", {"x", "g"}, "y");
    expect_error(m, {kFile, "node '/Gather'", "index 3 outside"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("data", {2, 3}, {1, 2, 3, 4, 5, 6});
    m.int64s("shape", {2}, {-1, -1});
    m.node("Reshape", {"data", "shape"}, "r");
    m.node("Shape", {"r"}, "s");
    m.node("Reshape", {"x", "s"}, "y");
    expect_error(m, {"node '/Reshape'", "two -1"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("data", {3}, {1, 2, 3});
    m.int64s("shape", {1}, {2});
    m.node("Expand", {"data", "shape"}, "e");
    m.node("Reshape", {"x", "e"}, "y");
    expect_error(m, {"node '/Expand'", "does not broadcast"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("shape", {2}, {65536, 65536});
    m.node("ConstantOfShape", {"shape"}, "big");
    m.node("Shape", {"big"}, "s");
    m.node("Reshape", {"x", "s"}, "y");
    expect_error(m, {"node '/ConstantOfShape'", "at most 2^24 elements"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("data", {2}, {1, 2});
    m.int64s("axes", {2}, {0, 0});
    m.node("Unsqueeze", {"data", "axes"}, "u");
    m.node("Shape", {"u"}, "s");
    m.node("Reshape", {"x", "s"}, "y");
    expect_error(m, {"node '/Unsqueeze'", "given twice"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("a", {1}, {1});
    m.float_constant("b", {1}, {1.0f});
    m.node("Add", {"a", "b"}, "s");
    m.node("Reshape", {"x", "s"}, "y");
    expect_error(m, {"node '/Add'", "differ in element type"});
  }
  {
    ModelBuilder m({4}, kFile);
    m.int64s("a", {1}, {7});
    m.int64s("zero", {1}, {0});
    m.node("Mod", {"a", "zero"}, "s");
    m.node("Reshape", {"x", "s"}, "y");
    expect_error(m, {"node '/Mod'", "division by 0"});
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gather_slice_transpose_and_concat_fold_as_onnx_defines),
      cmocka_unit_test(integers_past_2_to_the_53_fold_exactly),
      cmocka_unit_test(shapes_fold_through_unsqueeze_squeeze_and_reshape),
      cmocka_unit_test(arithmetic_comparisons_and_where_fold_as_onnx_defines),
      cmocka_unit_test(an_attention_scale_from_the_input_shape_folds_to_a_number),
      cmocka_unit_test(a_float_initializer_that_may_train_is_not_folded),
      cmocka_unit_test(an_initializer_through_identity_stays_one_parameter),
      cmocka_unit_test(folds_that_cannot_be_done_are_refused_naming_the_node),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
