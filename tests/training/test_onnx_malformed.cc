// ONNX models that pass the ONNX checker but are wrong where only shapes tell (axes outside a
// rank, zero strides, overflowing shape arithmetic, impossible dims): the importer refuses each
// with a CompileError naming the node, and never reads out of bounds or divides by zero (the
// sanitizer build runs this too). The models are built here with ONNX's protobuf classes.
// Streams and protobuf first: cmocka defines a fail() macro that <ios> declares as a member.
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "tests/cmocka_cpp.h"
#include "tests/training/onnx_model_builder.h"

namespace {

using remat_test::ModelBuilder;

void expect_error(const ModelBuilder& m, const std::vector<const char*>& needles) {
  const std::string message = m.error();
  if (message.empty()) fail_msg("a malformed model compiled");
  // Every refusal names the file first, whichever part of the importer refused.
  const std::string file = "/tmp/remat_test_malformed.onnx: ";
  if (message.compare(0, file.size(), file) != 0)
    fail_msg("message '%s' does not begin with the model's path", message.c_str());
  for (const char* needle : needles) {
    if (message.find(needle) == std::string::npos)
      fail_msg("message '%s' does not mention '%s'", message.c_str(), needle);
  }
}

void axes_outside_the_rank_are_refused(void**) {
  {
    ModelBuilder m({4});
    m.int64s("starts", {1}, {0});
    m.int64s("ends", {1}, {2});
    m.int64s("axes", {1}, {5});
    m.node("Slice", {"x", "starts", "ends", "axes"}, "y");
    expect_error(m, {"node '/Slice'", "axis outside the input's rank"});
  }
  {
    ModelBuilder m({4});
    m.int64s("starts", {2}, {0, 0});
    m.int64s("ends", {1}, {2});
    m.node("Slice", {"x", "starts", "ends"}, "y");
    expect_error(m, {"node '/Slice'", "different lengths"});
  }
  {
    ModelBuilder m({4});
    m.int64s("axes", {1}, {7});
    m.node("Unsqueeze", {"x", "axes"}, "y");
    expect_error(m, {"node '/Unsqueeze'", "outside the rank"});
  }
  {
    ModelBuilder m({4});
    m.int64s("index", {}, {0});
    onnx::NodeProto* g = m.node("Gather", {"x", "index"}, "y");
    onnx::AttributeProto* a = g->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(3);
    expect_error(m, {"node '/Gather'", "axis outside"});
  }
}

void strides_and_windows_out_of_range_are_refused(void**) {
  {
    ModelBuilder m({3, 8, 8});
    m.floats("w", {4, 3, 3, 3}, 4 * 3 * 3 * 3);
    ModelBuilder::ints(m.node("Conv", {"x", "w"}, "y"), "strides", {0, 0});
    expect_error(m, {"node '/Conv'", "strides and dilations below 1"});
  }
  {
    ModelBuilder m({3, 8, 8});
    ModelBuilder::ints(m.node("MaxPool", {"x"}, "y"), "kernel_shape", {0, 0});
    expect_error(m, {"node '/MaxPool'", "kernel 0 outside [1, 2^20]"});
  }
  {  // pads [top, left, bottom, right] of 1, 0, 0, 0: torch pads both ends alike
    ModelBuilder m({3, 8, 8});
    onnx::NodeProto* n = m.node("AveragePool", {"x"}, "y");
    ModelBuilder::ints(n, "kernel_shape", {3, 3});
    ModelBuilder::ints(n, "pads", {1, 0, 0, 0});
    expect_error(m, {"node '/AveragePool'", "pads [1, 0, 0, 0]", "both ends"});
  }
  {  // a pad of 2 on a window of 3
    ModelBuilder m({3, 8, 8});
    onnx::NodeProto* n = m.node("MaxPool", {"x"}, "y");
    ModelBuilder::ints(n, "kernel_shape", {3, 3});
    ModelBuilder::ints(n, "pads", {2, 2, 2, 2});
    expect_error(m, {"node '/MaxPool'", "pad 2 is more than half the window 3"});
  }
  {  // a zero dilation
    ModelBuilder m({3, 8, 8});
    onnx::NodeProto* n = m.node("MaxPool", {"x"}, "y");
    ModelBuilder::ints(n, "kernel_shape", {3, 3});
    ModelBuilder::ints(n, "dilations", {0, 1});
    expect_error(m, {"node '/MaxPool'", "dilation 0 outside [1, 2^20]"});
  }
  // Past the spatial ops' bound (plan/spatial_shape.h: kMaxSpatialAttr, 2^20), which the op
  // check would refuse later by the op's index alone: refused here by the node's name.
  {
    ModelBuilder m({3, 8, 8});
    m.floats("w", {4, 3, 3, 3}, 4 * 3 * 3 * 3);
    ModelBuilder::ints(m.node("Conv", {"x", "w"}, "y"), "strides", {1, 1048577});
    expect_error(m, {"node '/Conv'", "stride 1048577 outside [1, 2^20]"});
  }
  {
    ModelBuilder m({3, 8, 8});
    m.floats("w", {4, 3, 3, 3}, 4 * 3 * 3 * 3);
    ModelBuilder::ints(m.node("Conv", {"x", "w"}, "y"), "dilations", {2097152, 1});
    expect_error(m, {"node '/Conv'", "dilation 2097152 outside [1, 2^20]"});
  }
  {
    ModelBuilder m({3, 8, 8});
    onnx::NodeProto* n = m.node("AveragePool", {"x"}, "y");
    ModelBuilder::ints(n, "kernel_shape", {3, 3});
    ModelBuilder::ints(n, "strides", {1048577, 1});
    expect_error(m, {"node '/AveragePool'", "stride 1048577 outside [1, 2^20]"});
  }
}

// A dilated MaxPool (torch's max_pool2d(dilation=...)) is one max_pool with its dilations: the
// output size is torch's, (8 + 2 - 2 * 2 - 1) / 1 + 1 = 6 rows and (8 + 0 - 3 * 2 - 1) / 2 + 1 =
// 1 column, and its gradient takes the same attributes.
void a_dilated_max_pool_keeps_its_dilations(void**) {
  ModelBuilder m({3, 8, 8});
  onnx::NodeProto* n = m.node("MaxPool", {"x"}, "pooled");
  ModelBuilder::ints(n, "kernel_shape", {3, 3});
  ModelBuilder::ints(n, "strides", {1, 2});
  ModelBuilder::ints(n, "pads", {1, 0, 1, 0});
  ModelBuilder::ints(n, "dilations", {2, 3});
  m.node("Relu", {"pooled"}, "y");
  std::string error;
  const remat::compiler::CompileResult r = m.compile(&error);
  if (!error.empty()) fail_msg("%s", error.c_str());
  int pools = 0;
  for (const remat::compiler::Op& op : r.graph.ops) {
    if (op.code != remat::OpCode::kMaxPool && op.code != remat::OpCode::kMaxPoolGrad) continue;
    ++pools;
    assert_int_equal(op.iattrs.size(), 9);
    assert_int_equal(op.iattrs[remat::attr::max_pool::dilation_h.index], 2);
    assert_int_equal(op.iattrs[remat::attr::max_pool::dilation_w.index], 3);
    if (op.code == remat::OpCode::kMaxPool) {
      const remat::compiler::Tensor& y = r.graph.tensors[op.outputs[0]];
      assert_true(y.shape == (std::vector<int64_t>{2, 3, 6, 1}));
    }
  }
  assert_true(pools >= 2);
}

void bad_constants_and_overflowing_shape_arithmetic_are_refused(void**) {
  {
    ModelBuilder m({4});
    m.int64s("big", {1}, {int64_t{1} << 62});
    m.int64s("four", {1}, {4});
    m.node("Mul", {"big", "four"}, "shape");
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Mul'", "overflows"});
  }
  {
    ModelBuilder m({4});
    m.int64s("shape", {2}, {-1, -1});
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Reshape'", "two -1"});
  }
  {
    ModelBuilder m({4});
    m.floats("b", {int64_t{1} << 40, int64_t{1} << 40}, 0);  // 2^80 elements
    m.node("Add", {"x", "b"}, "y");
    expect_error(m, {"'b' has dims"});
  }
}

// Arithmetic and reductions outside what remat computes, each refused naming the node and why.
void arithmetic_and_reductions_the_importer_cannot_take_are_refused(void**) {
  {
    ModelBuilder m({4});
    m.node("Pow", {"x", "x"}, "y");
    expect_error(m, {"node '/Pow'", "Pow by a constant number only"});
  }
  {
    ModelBuilder m({4});
    m.floats("b", {3}, 3);
    m.node("Add", {"x", "b"}, "y");
    expect_error(m, {"node '/Add'", "shapes [2, 4] and [3] do not broadcast"});
  }
  {
    ModelBuilder m({4, 3});
    m.node("Mul", {"x", "x"}, "x2");
    m.node("Div", {"x2", "x"}, "x3");
    m.int64s("axes", {1}, {1});
    m.node("ReduceSum", {"x3", "axes"}, "s");
    m.node("Sub", {"x", "s"}, "y");  // [2, 4, 3] - [2, 1, 3]: broadcast along the middle
    std::string message;
    m.compile(&message);
    if (!message.empty())
      fail_msg("a model of broadcast arithmetic was refused: %s", message.c_str());
  }
  {
    ModelBuilder m({4, 3});
    ModelBuilder::int_attr(m.node("LogSoftmax", {"x"}, "y"), "axis", 1);
    expect_error(m, {"node '/LogSoftmax'", "over an axis but the last"});
  }
  {
    ModelBuilder m({4});
    m.int64s("axes", {1}, {5});
    m.node("ReduceSum", {"x", "axes"}, "y");
    expect_error(m, {"node '/ReduceSum'", "axis 5 outside the input's rank"});
  }
  {
    ModelBuilder m({4});
    ModelBuilder::ints(m.node("ReduceMean", {"x"}, "y"), "axes", {-3});
    expect_error(m, {"node '/ReduceMean'", "axis -3 outside"});
  }
  {
    ModelBuilder m({4});
    ModelBuilder::int_attr(m.node("Cast", {"x"}, "y"), "to", onnx::TensorProto_DataType_INT64);
    expect_error(m, {"node '/Cast'", "only from FLOAT to FLOAT", "INT64"});
  }
  {
    ModelBuilder m({4});
    m.floats("zero", {}, 0);
    m.graph->mutable_initializer(0)->add_float_data(0.0f);
    m.node("Div", {"x", "zero"}, "y");
    expect_error(m, {"node '/Div'", "division by zero"});
  }
}

// What a review found could crash or silently mislead the importer, each now refused or right.
void shape_arithmetic_edge_cases_are_refused_or_right(void**) {
  {  // Range of an empty tensor
    ModelBuilder m({4});
    m.int64s("empty", {0}, {});
    m.int64s("one", {}, {1});
    m.node("Range", {"empty", "one", "one"}, "r");
    m.int64s("minus", {1}, {-1});
    ModelBuilder::int_attr(m.node("Concat", {"r", "minus"}, "shape"), "axis", 0);
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Range'", "three scalars"});
  }
  {  // integer arithmetic with an empty operand: [1] and [0] broadcast to [0] (numpy's rule),
     // an empty shape, which cannot hold x's 4 elements
    ModelBuilder m({4});
    m.int64s("five", {1}, {5});
    m.int64s("empty", {0}, {});
    m.node("Add", {"five", "empty"}, "shape");
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Reshape'", "another element count"});
  }
  {  // a Range overflowing int64 as it counts
    ModelBuilder m({4});
    m.int64s("start", {}, {INT64_MAX - 1});
    m.int64s("limit", {}, {INT64_MAX});
    m.int64s("delta", {}, {INT64_MAX});
    m.node("Range", {"start", "limit", "delta"}, "r");
    m.node("Reshape", {"x", "r"}, "y");
    expect_error(
        m, {"node '/Reshape'"});  // one value, [INT64_MAX - 1]: no Range overflow, a bad shape
  }
  {  // a float constant far outside int64, cast to int64
    ModelBuilder m({4});
    onnx::TensorProto* t = m.graph->add_initializer();
    t->set_name("huge");
    t->set_data_type(onnx::TensorProto_DataType_FLOAT);
    t->add_dims(1);
    t->add_float_data(1e30f);
    ModelBuilder::int_attr(m.node("Cast", {"huge"}, "shape"), "to",
                           onnx::TensorProto_DataType_INT64);
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Cast'", "a cast to integers of 1e+30"});
  }
  {  // initializer dims that promise 2^32 floats with one value given
    ModelBuilder m({4});
    m.floats("w", {65536, 65536}, 1);
    m.node("Add", {"x", "w"}, "y");
    expect_error(m, {"'w'", "1 values of float data for 4294967296 elements"});
  }
  {  // Concat of tensors of different ranks
    ModelBuilder m({4, 6});
    m.int64s("flat", {2}, {2, 24});
    m.node("Reshape", {"x", "flat"}, "r");
    ModelBuilder::int_attr(m.node("Concat", {"x", "r"}, "y"), "axis", 2);
    expect_error(m, {"node '/Concat'", "inputs of different ranks"});
  }
  {  // one index of an axis at INT64_MAX
    ModelBuilder m({4});
    m.int64s("index", {}, {INT64_MAX});
    ModelBuilder::int_attr(m.node("Gather", {"x", "index"}, "y"), "axis", 1);
    expect_error(m, {"node '/Gather'", "index outside the axis"});
  }
  {  // a target shape whose product overflows
    ModelBuilder m({4});
    m.int64s("shape", {3}, {int64_t{1} << 30, int64_t{1} << 30, -1});
    m.node("Reshape", {"x", "shape"}, "y");
    expect_error(m, {"node '/Reshape'", "more elements than the input"});
  }
  {  // a dilation far past any image
    ModelBuilder m({3, 8, 8});
    m.floats("w", {4, 3, 3, 3}, 4 * 3 * 3 * 3);
    ModelBuilder::ints(m.node("Conv", {"x", "w"}, "y"), "dilations", {int64_t{1} << 62, 1});
    expect_error(m, {"node '/Conv'", "dilation 4611686018427387904 outside"});
  }
  {  // a builder refusal carries the node's name too
    ModelBuilder m({3, 4, 4});
    m.floats("w", {4, 3, 5, 5}, 4 * 3 * 5 * 5);
    m.node("Conv", {"x", "w"}, "y");
    expect_error(m, {"node '/Conv'", "the filter does not fit"});
  }
  {  // Shape's end (opset 15): [B, 4, 6] reshaped to [B, 24], not [B, 4, 6, 1]
    ModelBuilder m({4, 6});
    ModelBuilder::int_attr(m.node("Shape", {"x"}, "s"), "end", 1);
    m.int64s("minus", {1}, {-1});
    ModelBuilder::int_attr(m.node("Concat", {"s", "minus"}, "shape"), "axis", 0);
    m.node("Reshape", {"x", "shape"}, "y");
    std::string error;
    const remat::compiler::CompileResult r = m.compile(&error);
    assert_string_equal(error.c_str(), "");
    assert_true(r.graph.tensors[r.graph.labels.at(0)].shape == (std::vector<int64_t>{2, 24}));
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(axes_outside_the_rank_are_refused),
      cmocka_unit_test(arithmetic_and_reductions_the_importer_cannot_take_are_refused),
      cmocka_unit_test(strides_and_windows_out_of_range_are_refused),
      cmocka_unit_test(a_dilated_max_pool_keeps_its_dilations),
      cmocka_unit_test(bad_constants_and_overflowing_shape_arithmetic_are_refused),
      cmocka_unit_test(shape_arithmetic_edge_cases_are_refused_or_right),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
