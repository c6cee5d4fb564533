// ONNX import (docs/onnx.md): models exported by torch.onnx.export (tests/data/make_onnx.py)
// train as PyTorch trains them, from their own initial values, the same bytes with every
// strategy; what the importer does not take is refused naming the node or the input.
#include "tests/cmocka_cpp.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "compiler/compiler.h"
#include "training_harness.h"

namespace {

// Float32 against float64 over three steps, as test_golden.cc.
constexpr double kAbs = 2e-4;
constexpr double kRel = 2e-3;

std::string data_path(const std::string& name) {
  return std::string(REMAT_TEST_DATA_DIR) + "/" + name;
}

std::string meta(const remat::SafeTensorsFile& f, const std::string& key) {
  for (const auto& kv : f.metadata) {
    if (kv.first == key) return kv.second;
  }
  fail_msg("golden file has no metadata '%s'", key.c_str());
  return "";
}

void check_close(const std::string& what, const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= kAbs + kRel * std::fabs(static_cast<double>(want[i])))) {
      fail_msg("%s[%zu]: remat %.8g, PyTorch %.8g (|diff| %.3g)", what.c_str(), i, got[i], want[i],
               err);
    }
  }
}

// Compile options for ONNX |model| at |batch| with |loss| ("" where the model has its own).
remat::compiler::CompileOptions onnx_options(const std::string& model, int64_t batch,
                                             const std::string& loss) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = batch;
  o.loss = loss;
  return o;
}

remat::compiler::CompileOptions options_for(const remat::SafeTensorsFile& golden,
                                            const std::string& strategy) {
  remat::compiler::CompileOptions o = onnx_options(
      data_path(meta(golden, "model")), std::stoll(meta(golden, "batch")), meta(golden, "loss"));
  o.optimizer = meta(golden, "optimizer");
  o.strategy = strategy;
  return o;
}

// Every parameter (kind PARAM) or buffer (BUFFER) of |run| with its golden |prefix|.NAME.
template <typename Check>
void for_each_binding(const TrainingRun& run, const remat::SafeTensorsFile& golden,
                      const char* prefix, const Check& check) {
  for (remat_binding_kind kind : {REMAT_BINDING_PARAM, REMAT_BINDING_BUFFER}) {
    uint32_t count = 0;
    assert_int_equal(remat_plan_binding_count(run.plan, kind, &count), REMAT_OK);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      assert_int_equal(remat_plan_binding(run.plan, kind, i, &info), REMAT_OK);
      const remat::SafeTensor* want = golden.find(std::string(prefix) + info.name);
      if (want == nullptr) fail_msg("golden file lacks %s%s", prefix, info.name);
      if (want->data.size() != info.bytes)
        fail_msg("%s: %zu golden bytes for %llu", info.name, want->data.size(),
                 static_cast<unsigned long long>(info.bytes));
      std::vector<uint8_t> got(info.bytes);
      // read_param reads buffers too.
      assert_int_equal(remat_session_read_param(run.session, info.name, got.data(), got.size()),
                       REMAT_OK);
      check(info, got, want->data);
    }
  }
}

// Sets every input.NAME and label.NAME of |golden| on |run|.
void set_batch(TrainingRun& run, const remat::SafeTensorsFile& golden) {
  for (const auto& t : golden.tensors) {
    for (const char* prefix : {"input.", "label."}) {
      if (t.name.compare(0, std::strlen(prefix), prefix) == 0) {
        run.set(t.name.substr(std::strlen(prefix)), t.data.data(), t.data.size());
      }
    }
  }
}

void run_golden(const char* file) {
  remat::SafeTensorsFile golden;
  std::string error;
  if (!remat::read_safetensors(data_path(file), &golden, &error)) fail_msg("%s", error.c_str());
  TrainingRun run(options_for(golden, "none"));
  // The session starts from the model's own initializers (the plan's Init Data), bit for bit.
  for_each_binding(run, golden, "init.",
                   [&](const remat_tensor_info& info, const std::vector<uint8_t>& got,
                       const std::vector<uint8_t>& want) {
                     if (got != want)
                       fail_msg("%s: the session's initial value is not the ONNX initializer's",
                                info.name);
                   });
  set_batch(run, golden);
  const remat::SafeTensor* losses = golden.find("loss");
  assert_non_null(losses);
  const int steps = std::stoi(meta(golden, "steps"));
  for (int s = 0; s < steps; ++s) {
    const float loss = run.step();
    float want = 0;
    std::memcpy(&want, losses->data.data() + 4 * s, 4);
    check_close(std::string(file) + " loss of step " + std::to_string(s), &loss, &want, 1);
  }
  for_each_binding(run, golden, "final.",
                   [&](const remat_tensor_info& info, const std::vector<uint8_t>& got,
                       const std::vector<uint8_t>& want) {
                     if (info.dtype == REMAT_DTYPE_I64) {  // num_batches_tracked counts exactly
                       if (got != want) fail_msg("%s differs from PyTorch's", info.name);
                       return;
                     }
                     check_close(std::string(file) + " " + info.name,
                                 reinterpret_cast<const float*>(got.data()),
                                 reinterpret_cast<const float*>(want.data()), got.size() / 4);
                   });
}

void an_exported_mlp_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_mlp_sgd.safetensors");
  run_golden("golden_onnx_mlp_adam.safetensors");
  // Neg, Sub, and Mul by a constant scalar.
  run_golden("golden_onnx_negmlp_sgd.safetensors");
  // The loss computed in the graph (SoftmaxCrossEntropyLoss), compiled without --loss.
  run_golden("golden_onnx_mlp_loss_adam.safetensors");
}

// A model computing its own loss with ordinary ops (a scalar output, no --loss): LeakyRelu, Erf,
// LogSoftmax, Pow, Sqrt, ReduceMean and ReduceSum, Sub/Div/Add/Mul broadcast along leading and
// trailing axes, a parameter multiplied, a constant added, Cast; opset 13.
void an_exported_regressor_with_its_own_loss_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_regressor_sgd.safetensors");
  run_golden("golden_onnx_regressor_adam.safetensors");
  // A mean over axes 1 and 3 (two reduce_sum ops), a sum over axes 2 and 3, a mean kept as a
  // middle axis of 1 and subtracted (broadcast along the middle).
  run_golden("golden_onnx_reducer_sgd.safetensors");
}

void an_exported_cnn_with_batch_norm_and_max_pooling_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_convpool_sgd.safetensors");
}

void an_exported_resnet_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_resnet_sgd.safetensors");
  run_golden("golden_onnx_resnet_adam.safetensors");
}

void an_exported_depthwise_net_of_fixed_batch_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_dscnn_sgd.safetensors");
}

// Token ids in (int64 in the model, i32 bindings), embeddings from parameter tables at the ids
// and at constant positions, LayerNormalization, attention through Transpose and batched
// MatMul, the exact GELU as Div/Erf/Add/Mul/Mul, a fused q/k/v projection Split three ways.
void an_exported_bert_like_encoder_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_bert_sgd.safetensors");
  // Opset 13, where each LayerNorm is exported decomposed (nine nodes, one layernorm op).
  run_golden("golden_onnx_bert_opset13_sgd.safetensors");
}

void an_exported_gpt_like_classifier_trains_as_pytorch_does(void**) {
  run_golden("golden_onnx_gpt_sgd.safetensors");
  run_golden("golden_onnx_gpt_adam.safetensors");
}

// What hand-written models lack and exported ones have (issue 39): an attention scaled by
// (D // heads) ** 0.5 with D read from the input's shape (Shape, Gather, Div, Cast and Pow,
// folded to one number), and avg_pool2d over a feature map's own 16 x 10 shape (one window that
// is not square).
void exported_shape_arithmetic_and_a_rectangular_pool_train_as_pytorch_does(void**) {
  run_golden("golden_onnx_shape_attention_sgd.safetensors");
  run_golden("golden_onnx_kws_sgd.safetensors");
}

// nn.Linear on 3-D input, exported as MatMul and Add of its bias: one matmul with the bias as
// its epilogue (the bias_add the Add was would reread the product); the goldens above train it.
void an_exported_linear_on_3d_input_is_one_matmul_with_its_bias(void**) {
  for (const char* model : {"onnx/bert.onnx", "onnx/gpt.onnx"}) {
    const remat::compiler::CompileResult r =
        remat::compiler::compile(onnx_options(data_path(model), 2, "cross_entropy"));
    const remat::compiler::Graph& g = r.graph;
    std::vector<int> producer(g.tensors.size(), -1);
    int with_bias = 0;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      const remat::compiler::Op& op = g.ops[i];
      if (op.phase != remat::compiler::Phase::kForward) continue;
      for (int t : op.outputs) producer[static_cast<size_t>(t)] = static_cast<int>(i);
      if (op.code == remat::OpCode::kMatMul && op.inputs.size() == 3) ++with_bias;
      if (op.code != remat::OpCode::kBiasAdd) continue;
      const int from = producer[static_cast<size_t>(op.inputs[0])];
      if (from >= 0 && g.ops[static_cast<size_t>(from)].code == remat::OpCode::kMatMul) {
        fail_msg("%s: op %zu adds a bias to matmul op %d's product", model, i, from);
      }
    }
    if (with_bias < 6)
      fail_msg("%s: %d matmuls with a bias, expected a linear layer's at least 6", model,
               with_bias);
  }
}

// Recomputation and spilling on imported graphs: parameters and running statistics after three
// steps are the same bytes whatever the strategy, and with a checkpoint spilled to host memory
// (the ResNet's splits within 92 KiB of device memory).
void imported_models_give_the_same_bytes_with_every_strategy(void**) {
  for (const char* file :
       {"golden_onnx_resnet_adam.safetensors", "golden_onnx_convpool_sgd.safetensors",
        "golden_onnx_gpt_adam.safetensors", "golden_onnx_regressor_adam.safetensors"}) {
    remat::SafeTensorsFile golden;
    std::string error;
    if (!remat::read_safetensors(data_path(file), &golden, &error)) fail_msg("%s", error.c_str());
    std::vector<uint8_t> reference;
    for (const char* strategy : {"none", "sqrt", "selective", "splits", "splits+spill"}) {
      const bool spill = std::strcmp(strategy, "splits+spill") == 0;
      remat::compiler::CompileOptions o = options_for(golden, spill ? "splits" : strategy);
      if (spill && std::strstr(file, "resnet") == nullptr) continue;
      if (spill) o.device_budget = 92 * 1024;  // two checkpoints spilled (Adam: 63 KiB persistent)
      TrainingRun run(o);
      set_batch(run, golden);
      for (int s = 0; s < 3; ++s) run.step();
      const std::vector<uint8_t> bytes = run.params();
      if (reference.empty()) {
        reference = bytes;
      } else if (bytes != reference) {
        fail_msg("%s: strategy %s gives other parameter or buffer bytes than none", file, strategy);
      }
    }
  }
}

// Compiles |model| and returns the CompileError's message ("" when it compiled).
std::string compile_error(const std::string& model, int64_t batch, const std::string& loss,
                          std::vector<std::string>* warnings = nullptr) {
  try {
    const remat::compiler::CompileResult r =
        remat::compiler::compile(onnx_options(model, batch, loss));
    if (warnings != nullptr) *warnings = r.report.warnings;
  } catch (const remat::compiler::CompileError& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::string& message, const std::vector<const char*>& needles) {
  if (message.empty()) fail_msg("compiled, where an error was expected");
  for (const char* needle : needles) {
    if (message.find(needle) == std::string::npos)
      fail_msg("message '%s' does not mention '%s'", message.c_str(), needle);
  }
}

void models_the_importer_cannot_take_are_refused_naming_why(void**) {
  // A node of an op remat does not import: its name, op type, the opset and input shapes.
  expect_error(compile_error(data_path("onnx/unsupported.onnx"), 4, "cross_entropy"),
               {"unsupported.onnx", "node '/TopK'", "(TopK, opset 17)", "[4, 8]",
                "does not import this op"});
  // A fixed batch axis that is not --batch.
  expect_error(compile_error(data_path("onnx/dscnn.onnx"), 3, "cross_entropy"),
               {"input 'x'", "fixed batch of 4", "--batch is 3"});
  // No loss for an output that is not one; a loss that is none of the two; --loss on a template.
  expect_error(compile_error(data_path("onnx/mlp.onnx"), 4, ""),
               {"output 'logits' [4, 4]", "--loss cross_entropy"});
  expect_error(compile_error(data_path("onnx/mlp.onnx"), 4, "hinge"),
               {"--loss 'hinge'", "cross_entropy or mse"});
  expect_error(compile_error("mlp:layers=1,width=4,in=2,classes=2", 4, "mse"),
               {"--loss is for ONNX models"});
  expect_error(compile_error(data_path("onnx/mlp_loss.onnx"), 4, "mse"),
               {"computes its own loss", "without --loss"});
  // No file, and a file that is not a model.
  expect_error(compile_error(data_path("onnx/missing.onnx"), 4, "mse"),
               {"missing.onnx", "cannot open"});
  // A directory named like a model.
  const std::string directory = "/tmp/remat_test_directory.onnx";
  mkdir(directory.c_str(), 0700);
  expect_error(compile_error(directory, 4, "mse"), {"remat_test_directory.onnx", "not a file"});
  rmdir(directory.c_str());
  const std::string garbage = "/tmp/remat_test_not_a_model.onnx";
  FILE* f = std::fopen(garbage.c_str(), "wb");
  assert_non_null(f);
  std::fputs("this is not a protobuf \xff\xff\xff", f);
  std::fclose(f);
  expect_error(compile_error(garbage, 4, "mse"), {"not_a_model.onnx", "not an ONNX model"});
  std::remove(garbage.c_str());
}

// An eval-mode export folds each batch norm into its convolution and names the folded weights
// itself: the model still compiles, and the importer names every such parameter.
void parameters_the_export_renamed_are_named_in_warnings(void**) {
  std::vector<std::string> warnings;
  assert_string_equal(
      compile_error(data_path("onnx/convpool_eval.onnx"), 4, "cross_entropy", &warnings).c_str(),
      "");
  assert_int_equal(warnings.size(), 4);
  for (const std::string& w : warnings) {
    if (w.find("parameter 'onnx::Conv_") != 0 || w.find("renamed or folded") == std::string::npos) {
      fail_msg("warning '%s' does not name a folded parameter", w.c_str());
    }
  }
  warnings.clear();
  assert_string_equal(
      compile_error(data_path("onnx/resnet.onnx"), 4, "cross_entropy", &warnings).c_str(), "");
  assert_int_equal(warnings.size(), 0);
}

// A training-mode export keeps Dropout and its ratio, which remat's RNG honours; an eval-mode
// export has none (the model trains without it).
void dropout_is_kept_at_its_ratio_from_a_training_mode_export(void**) {
  for (const char* file : {"onnx/dropout_train.onnx", "onnx/dropout_eval.onnx"}) {
    remat::compiler::CompileResult r;
    try {
      r = remat::compiler::compile(onnx_options(data_path(file), 4, "cross_entropy"));
    } catch (const std::exception& e) {
      fail_msg("%s: %s", file, e.what());
    }
    int dropouts = 0;
    for (const remat::compiler::Op& op : r.graph.ops) {
      if (op.code != remat::OpCode::kDropout) continue;
      ++dropouts;
      assert_true(op.fattrs.at(0) == 0.25f);
    }
    assert_int_equal(dropouts, std::strstr(file, "train") != nullptr ? 1 : 0);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_exported_mlp_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_regressor_with_its_own_loss_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_cnn_with_batch_norm_and_max_pooling_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_resnet_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_depthwise_net_of_fixed_batch_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_bert_like_encoder_trains_as_pytorch_does),
      cmocka_unit_test(an_exported_gpt_like_classifier_trains_as_pytorch_does),
      cmocka_unit_test(exported_shape_arithmetic_and_a_rectangular_pool_train_as_pytorch_does),
      cmocka_unit_test(an_exported_linear_on_3d_input_is_one_matmul_with_its_bias),
      cmocka_unit_test(imported_models_give_the_same_bytes_with_every_strategy),
      cmocka_unit_test(models_the_importer_cannot_take_are_refused_naming_why),
      cmocka_unit_test(parameters_the_export_renamed_are_named_in_warnings),
      cmocka_unit_test(dropout_is_kept_at_its_ratio_from_a_training_mode_export),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
