// The ONNX importer's boolean masks (src/compiler/onnx/masks.cc) and sequence-first values
// (src/compiler/onnx/sequence_first.cc), on hand-built models. A BOOL input's views and the
// numbers a Where (or a Cast to FLOAT) picks by it, checked through the MSE loss they give
// against zero labels (worked out by hand in each case); a mask id other than 0 or 1 stopped at
// run time. A batch-first Transpose around row-wise nodes (as torch.nn.MultiheadAttention
// exports them) emits no permute and trains to the same bytes as the same model without the
// Transposes; a sequence-first value read any other way is permuted once, with the same bytes.
// What the importer cannot take is refused naming the node.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cmocka_cpp.h"
#include "tests/training/onnx_model_builder.h"
#include "tests/training/training_harness.h"

namespace {

using remat_test::ModelBuilder;

constexpr const char* kFile = "/tmp/remat_test_layouts.onnx";

remat::compiler::CompileOptions options_of(const ModelBuilder& m) {
  m.save();
  remat::compiler::CompileOptions o;
  o.model = m.path;
  o.batch = 2;
  o.loss = "mse";
  o.optimizer = "sgd:lr=0.5";
  return o;
}

// The forward pass's ops of code |code| in |m|'s compiled graph.
int count_ops(const ModelBuilder& m, remat::OpCode code) {
  const remat::compiler::CompileResult r = remat::compiler::compile(options_of(m));
  int count = 0;
  for (const remat::compiler::Op& op : r.graph.ops)
    count += op.code == code && op.phase == remat::compiler::Phase::kForward;
  return count;
}

// The first step's loss of |m| with x and the labels zero and the i32 input "pad" = |pad|.
float first_loss(const ModelBuilder& m, const std::vector<int32_t>& pad, size_t x_count) {
  TrainingRun run(options_of(m), 1);
  const std::vector<float> zeros(x_count, 0.0f);
  run.set("x", zeros.data(), zeros.size() * 4);
  run.set("labels", zeros.data(), zeros.size() * 4);
  run.set("pad", pad.data(), pad.size() * 4);
  return run.step();
}

// x [b, 6], pad BOOL [b, 3]; keep = Not(pad) unsqueezed, expanded to [b, 2, 3] and reshaped to
// [b, 6]; y = x * gain + Where(keep, 0.5, -2) (the -2 a constant tensor of one number).
ModelBuilder masked_model() {
  ModelBuilder m({6}, kFile);
  m.input("pad", onnx::TensorProto_DataType_BOOL, {3});
  m.floats("gain", {6}, 6);
  m.int64s("axis1", {1}, {1});
  m.int64s("heads", {3}, {1, 2, 1});
  m.int64s("flat", {2}, {0, 6});
  m.float_constant("half", {}, {0.5f});
  m.float_constant("minus_two", {2, 6}, std::vector<float>(12, -2.0f));
  m.node("Not", {"pad"}, "keep");
  m.node("Unsqueeze", {"keep", "axis1"}, "keep3");
  m.node("Expand", {"keep3", "heads"}, "keep_heads");
  m.node("Reshape", {"keep_heads", "flat"}, "keep_flat");
  ModelBuilder::int_attr(m.node("Cast", {"keep_flat"}, "keep_bool"), "to",
                         onnx::TensorProto_DataType_BOOL);
  m.node("Where", {"keep_bool", "half", "minus_two"}, "mask");
  m.node("Mul", {"x", "gain"}, "scaled");
  m.node("Add", {"scaled", "mask"}, "y");
  return m;
}

void a_bool_input_picks_numbers_through_its_views(void**) {
  // pad [[1, 0, 0], [0, 1, 1]]: keep [[0, 1, 1], [1, 0, 0]], repeated twice along each row:
  // mask [[-2, .5, .5, -2, .5, .5], [.5, -2, -2, .5, -2, -2]]; the squares sum to 9 + 16.5.
  assert_true(first_loss(masked_model(), {1, 0, 0, 0, 1, 1}, 12) == 25.5f / 12.0f);
  // A Cast to FLOAT: y = x * gain + pad, loss = mean(pad) (pad squared is pad).
  ModelBuilder cast({3}, kFile);
  cast.input("pad", onnx::TensorProto_DataType_BOOL, {3});
  cast.floats("gain", {3}, 3);
  ModelBuilder::int_attr(cast.node("Cast", {"pad"}, "ones"), "to",
                         onnx::TensorProto_DataType_FLOAT);
  cast.node("Mul", {"x", "gain"}, "scaled");
  cast.node("Add", {"scaled", "ones"}, "y");
  assert_true(first_loss(cast, {1, 0, 0, 1, 1, 1}, 6) == 4.0f / 6.0f);
  // Two scalars: the mask has the condition's shape, [[.5, -2, -2], [-2, .5, .5]]: squares 8.25
  // and 4.5.
  ModelBuilder scalars({3}, kFile);
  scalars.input("pad", onnx::TensorProto_DataType_BOOL, {3});
  scalars.floats("gain", {3}, 3);
  scalars.float_constant("half", {}, {0.5f});
  scalars.float_constant("minus_two", {}, {-2.0f});
  scalars.node("Where", {"pad", "half", "minus_two"}, "mask");
  scalars.node("Mul", {"x", "gain"}, "scaled");
  scalars.node("Add", {"scaled", "mask"}, "y");
  assert_true(first_loss(scalars, {1, 0, 0, 0, 1, 1}, 6) == 12.75f / 6.0f);
}

void a_mask_holding_other_than_0_or_1_stops_the_step(void**) {
  TrainingRun run(options_of(masked_model()), 1);
  const std::vector<float> zeros(12, 0.0f);
  const std::vector<int32_t> pad = {0, 0, 2, 0, 0, 0};
  run.set("x", zeros.data(), zeros.size() * 4);
  run.set("labels", zeros.data(), zeros.size() * 4);
  run.set("pad", pad.data(), pad.size() * 4);
  float loss = 0.0f;
  assert_int_equal(remat_session_step(run.session, &loss), REMAT_ERROR_OUT_OF_RANGE);
  const std::string message = remat_session_last_error(run.session);
  if (message.find("id 2") == std::string::npos || message.find("embedding") == std::string::npos)
    fail_msg("message '%s' names neither the op nor the id", message.c_str());
}

void expect_refusal(const ModelBuilder& m, const std::vector<const char*>& needles) {
  const std::string message = m.error();
  if (message.empty()) fail_msg("a model the importer cannot take compiled");
  for (const char* needle : needles) {
    if (message.find(needle) == std::string::npos)
      fail_msg("message '%s' does not mention '%s'", message.c_str(), needle);
  }
}

void booleans_the_importer_cannot_take_are_refused_naming_the_node(void**) {
  {  // Where picking a computed tensor
    ModelBuilder m({3}, kFile);
    m.input("pad", onnx::TensorProto_DataType_BOOL, {3});
    m.float_constant("zero", {}, {0.0f});
    m.node("Where", {"pad", "x", "zero"}, "y");
    expect_refusal(m, {"node '/Where'", "two float constants"});
  }
  {  // -inf or a tensor that holds +inf: no sum gives that pick
    ModelBuilder m({3}, kFile);
    m.input("pad", onnx::TensorProto_DataType_BOOL, {3});
    m.float_constant("minus_inf", {}, {-INFINITY});
    m.float_constant("mixed", {3}, {0.0f, INFINITY, 1.0f});
    m.node("Where", {"pad", "minus_inf", "mixed"}, "y");
    expect_refusal(m, {"node '/Where'", "without NaN or the other infinity"});
  }
  {  // a boolean read as numbers
    ModelBuilder m({3}, kFile);
    m.input("pad", onnx::TensorProto_DataType_BOOL, {3});
    m.node("Not", {"pad"}, "keep");
    m.node("Add", {"x", "keep"}, "y");
    expect_refusal(m, {"node '/Add'", "'keep' is a boolean"});
  }
  {  // Not of floats
    ModelBuilder m({3}, kFile);
    m.node("Not", {"x"}, "y");
    expect_refusal(m, {"node '/Not'", "not a boolean"});
  }
  {  // Where of integers, and their Expand
    ModelBuilder m({3}, kFile);
    m.input("ids", onnx::TensorProto_DataType_INT64, {3});
    m.float_constant("zero", {}, {0.0f});
    m.float_constant("one", {}, {1.0f});
    m.node("Where", {"ids", "one", "zero"}, "y");
    expect_refusal(m, {"node '/Where'", "BOOL graph input"});
    ModelBuilder e({3}, kFile);
    e.input("ids", onnx::TensorProto_DataType_INT64, {3});
    e.int64s("shape", {2}, {2, 3});
    e.node("Expand", {"ids", "shape"}, "y");
    expect_refusal(e, {"node '/Expand'", "Expand of integers"});
  }
}

// x [b, 4, 6] -> (Transpose (1, 0, 2) when |sequence_first|) -> x W^T + bias -> columns 2..6 ->
// [rows, 5] -> Gemm (W2, b2) -> [4, b, 3] or [b, 4, 3] -> (Transpose back) -> y [b, 4, 3].
ModelBuilder row_wise_model(bool sequence_first) {
  ModelBuilder m({4, 6}, kFile);
  std::vector<float> w(8 * 6), w2(3 * 5);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.05f * static_cast<float>(k % 7) - 0.1f;
  for (size_t k = 0; k < w2.size(); ++k) w2[k] = 0.1f * static_cast<float>(k % 5) - 0.2f;
  m.floats("w", {8, 6}, w);
  m.floats("bias", {8}, {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.1f, 0.2f, 0.4f});
  m.floats("w2", {3, 5}, w2);
  m.floats("b2", {3}, {0.25f, -0.5f, 0.125f});
  m.int64s("starts", {1}, {2});
  m.int64s("ends", {1}, {7});
  m.int64s("axes", {1}, {2});
  m.int64s("rows", {2}, {-1, 5});
  m.int64s("split", {3},
           sequence_first ? std::vector<int64_t>{4, -1, 3} : std::vector<int64_t>{-1, 4, 3});
  std::string in = "x";
  if (sequence_first) {
    ModelBuilder::ints(m.node("Transpose", {"x"}, "sx"), "perm", {1, 0, 2});
    in = "sx";
  }
  ModelBuilder::ints(m.node("Transpose", {"w"}, "wt"), "perm", {1, 0});
  m.node("MatMul", {in, "wt"}, "projected");
  m.node("Add", {"bias", "projected"}, "biased");
  m.node("Slice", {"biased", "starts", "ends", "axes"}, "columns");
  m.node("Reshape", {"columns", "rows"}, "flat");
  onnx::NodeProto* gemm = m.node("Gemm", {"flat", "w2", "b2"}, "out");
  ModelBuilder::int_attr(gemm, "transB", 1);
  m.node("Reshape", {"out", "split"}, sequence_first ? "out3" : "y");
  if (sequence_first) ModelBuilder::ints(m.node("Transpose", {"out3"}, "y"), "perm", {1, 0, 2});
  return m;
}

// |m| and |reference| trained 3 steps from the same batch give the same loss and parameter bytes.
void expect_same_training(const ModelBuilder& m, const ModelBuilder& reference, size_t x_count,
                          size_t y_count) {
  std::vector<float> x(x_count), labels(y_count);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.01f * static_cast<float>((k * 37) % 101) - 0.5f;
  for (size_t k = 0; k < labels.size(); ++k) labels[k] = 0.02f * static_cast<float>(k % 9);
  std::vector<float> losses[2];
  std::vector<uint8_t> params[2];
  const ModelBuilder* models[2] = {&m, &reference};
  for (int k = 0; k < 2; ++k) {
    TrainingRun run(options_of(*models[k]), 1);
    for (int s = 0; s < 3; ++s) {
      run.set("x", x.data(), x.size() * 4);
      run.set("labels", labels.data(), labels.size() * 4);
      losses[k].push_back(run.step());
    }
    params[k] = run.params();
  }
  if (std::memcmp(losses[0].data(), losses[1].data(), losses[0].size() * 4) != 0)
    fail_msg("losses differ: %.9g vs %.9g", losses[0].back(), losses[1].back());
  if (params[0] != params[1]) fail_msg("the trained parameters' bytes differ");
}

void a_batch_first_transpose_around_row_wise_nodes_emits_no_permute(void**) {
  const ModelBuilder swapped = row_wise_model(true), plain = row_wise_model(false);
  assert_int_equal(count_ops(swapped, remat::OpCode::kPermute), 0);
  expect_same_training(swapped, plain, 2 * 4 * 6, 2 * 4 * 3);
}

void a_sequence_first_value_read_otherwise_is_permuted_once(void**) {
  // x -> Transpose -> Relu -> Transpose -> * gain: Relu reads [4, b, 6] in the ONNX order (one
  // permute), and * gain reads its transpose back (one more), as the two Transposes were before.
  ModelBuilder m({4, 6}, kFile), reference({4, 6}, kFile);
  for (ModelBuilder* b : {&m, &reference})
    b->floats("gain", {6}, {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f});
  ModelBuilder::ints(m.node("Transpose", {"x"}, "sx"), "perm", {1, 0, 2});
  m.node("Relu", {"sx"}, "r");
  ModelBuilder::ints(m.node("Transpose", {"r"}, "back"), "perm", {1, 0, 2});
  m.node("Mul", {"back", "gain"}, "y");
  reference.node("Relu", {"x"}, "r");
  reference.node("Mul", {"r", "gain"}, "y");
  assert_int_equal(count_ops(m, remat::OpCode::kPermute), 2);
  expect_same_training(m, reference, 2 * 4 * 6, 2 * 4 * 6);
  // A graph output held sequence-first is permuted into its ONNX order for the loss.
  ModelBuilder out({4, 6}, kFile);
  out.floats("gain", {6}, {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f});
  out.node("Mul", {"x", "gain"}, "scaled");
  ModelBuilder::ints(out.node("Transpose", {"scaled"}, "y"), "perm", {1, 0, 2});
  assert_int_equal(count_ops(out, remat::OpCode::kPermute), 1);
}

// torch.nn.MultiheadAttention's sequence-first attention over x [b, 3, 4] (2 heads of 2; q, k
// and v one projection), masked by a BOOL pad [b, 3] reshaped, expanded over the heads and
// reshaped to [b * 2, 1, 3], then Where(pad, -3, 0); |per_head| adds a constant that differs
// between the heads, |shape_reader| a Shape of the scores; |causal| makes the mask torch's
// masked_fill of a causal float mask [1, 3, 3] by the pad: Where(pad, -inf, causal).
ModelBuilder sequence_first_attention(bool per_head, bool shape_reader, bool causal = false) {
  ModelBuilder m({3, 4}, kFile);
  m.input("pad", onnx::TensorProto_DataType_BOOL, {3});
  std::vector<float> w(16);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.3f * static_cast<float>(k % 5) - 0.4f;
  m.floats("w", {4, 4}, w);
  m.int64s("heads", {3}, {0, -1, 2});
  m.int64s("pad4", {4}, {-1, 1, 1, 3});
  m.int64s("over_heads", {4}, {1, 2, 1, 1});
  m.int64s("pad3", {3}, {-1, 1, 3});
  m.int64s("merged_shape", {3}, {3, -1, 4});
  m.float_constant("root", {}, {1.41421356f});
  m.float_constant("minus_three", {}, {-3.0f});
  m.float_constant("zeros", {4, 1, 3}, std::vector<float>(12, 0.0f));
  m.float_constant("by_head", {4, 1, 3}, {0, 0, -6, -6, 0, 0, 0, 0, -6, -6, 0, 0});
  const float inf = INFINITY;
  m.float_constant("minus_inf", {}, {-inf});
  m.float_constant("causal", {1, 3, 3}, {0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
  ModelBuilder::ints(m.node("Transpose", {"x"}, "xs"), "perm", {1, 0, 2});
  m.node("MatMul", {"xs", "w"}, "h");
  m.node("Reshape", {"h", "heads"}, "q4");
  m.node("Reshape", {"h", "heads"}, "k4");
  m.node("Reshape", {"h", "heads"}, "v4");
  ModelBuilder::ints(m.node("Transpose", {"q4"}, "qh"), "perm", {1, 0, 2});
  ModelBuilder::ints(m.node("Transpose", {"k4"}, "kt"), "perm", {1, 2, 0});
  ModelBuilder::ints(m.node("Transpose", {"v4"}, "vh"), "perm", {1, 0, 2});
  m.node("MatMul", {"qh", "kt"}, "scores");
  if (shape_reader) m.node("Shape", {"scores"}, "scores_shape");
  m.node("Div", {"scores", "root"}, "scaled");
  m.node("Reshape", {"pad", "pad4"}, "pad_b11s");
  m.node("Expand", {"pad_b11s", "over_heads"}, "pad_heads");
  m.node("Reshape", {"pad_heads", "pad3"}, "pad_rows");
  if (causal) {
    m.node("Where", {"pad_rows", "minus_inf", "causal"}, "mask");
  } else {
    m.node("Where", {"pad_rows", "minus_three", "zeros"}, "mask");
  }
  std::string mask = "mask";
  if (per_head) {
    m.node("Add", {"mask", "by_head"}, "mask_by_head");
    mask = "mask_by_head";
  }
  m.node("Add", {"scaled", mask}, "masked");
  ModelBuilder::int_attr(m.node("Softmax", {"masked"}, "probs"), "axis", -1);
  m.node("MatMul", {"probs", "vh"}, "context");
  ModelBuilder::ints(m.node("Transpose", {"context"}, "merged"), "perm", {1, 0, 2});
  m.node("Reshape", {"merged", "merged_shape"}, "out");
  ModelBuilder::ints(m.node("Transpose", {"out"}, "y"), "perm", {1, 0, 2});
  return m;
}

// The first step's loss of |m| with --attention |kernel|, and its fused attention ops.
float attention_loss(const ModelBuilder& m, remat::compiler::AttentionKernel kernel,
                     size_t* fused) {
  remat::compiler::CompileOptions o = options_of(m);
  o.attention = kernel;
  *fused = remat::compiler::compile(o).report.fused_attention_ops;
  TrainingRun run(o, 1);
  std::vector<float> x(24), labels(24, 0.0f);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.1f * static_cast<float>((k * 7) % 11) - 0.5f;
  const std::vector<int32_t> pad = {0, 0, 1, 0, 1, 1};
  run.set("x", x.data(), x.size() * 4);
  run.set("labels", labels.data(), labels.size() * 4);
  run.set("pad", pad.data(), pad.size() * 4);
  return run.step();
}

void a_sequence_first_attention_fuses_only_where_its_mask_is_alike_across_heads(void**) {
  for (bool per_head : {false, true}) {
    size_t fused = 0, unfused_ops = 0;
    const ModelBuilder m = sequence_first_attention(per_head, false);
    const float f = attention_loss(m, remat::compiler::AttentionKernel::kFused, &fused);
    const float u = attention_loss(m, remat::compiler::AttentionKernel::kUnfused, &unfused_ops);
    // A mask that differs between heads is not head 0's: that attention stays unfused.
    assert_int_equal(fused, per_head ? 0 : 1);
    assert_int_equal(unfused_ops, 0);
    if (!(std::fabs(f - u) <= 1e-6f * std::fabs(u)))
      fail_msg("per_head %d: fused loss %.9g, unfused %.9g", per_head, f, u);
  }
  // A causal mask filled with -inf where the pad holds (Where(pad, -inf, causal): causal + the
  // lookup) is alike across heads too: fused, and equal to the unfused loss.
  {
    size_t fused = 0, unfused_ops = 0;
    const ModelBuilder m = sequence_first_attention(false, false, true);
    const float f = attention_loss(m, remat::compiler::AttentionKernel::kFused, &fused);
    const float u = attention_loss(m, remat::compiler::AttentionKernel::kUnfused, &unfused_ops);
    assert_int_equal(fused, 1);
    if (!(std::fabs(f - u) <= 1e-6f * std::fabs(u)))
      fail_msg("causal: fused loss %.9g, unfused %.9g", f, u);
  }
  // A Shape of a value the pattern holds back is a reader: the attention is imported node by
  // node, and compiles.
  std::string error;
  sequence_first_attention(false, true).compile(&error);
  if (!error.empty()) fail_msg("%s", error.c_str());
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_bool_input_picks_numbers_through_its_views),
      cmocka_unit_test(a_mask_holding_other_than_0_or_1_stops_the_step),
      cmocka_unit_test(booleans_the_importer_cannot_take_are_refused_naming_the_node),
      cmocka_unit_test(a_batch_first_transpose_around_row_wise_nodes_emits_no_permute),
      cmocka_unit_test(a_sequence_first_value_read_otherwise_is_permuted_once),
      cmocka_unit_test(a_sequence_first_attention_fuses_only_where_its_mask_is_alike_across_heads),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
