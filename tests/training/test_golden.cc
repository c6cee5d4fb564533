// Training steps against PyTorch: tests/data/golden_*.safetensors, made by make_golden.py in
// float64 from the same initial parameters and batch. remat runs in float32, so the
// comparison has a tolerance; everything else about the step (formulas, optimizer) must match.
#include "tests/cmocka_cpp.h"

#include <cmath>
#include <cstring>
#include <string>

#include "io/safetensors.h"
#include "training_harness.h"

// Relative tolerance for float32 against float64 over three steps.
constexpr double kAbs = 2e-4;
constexpr double kRel = 2e-3;

static std::string meta(const remat::SafeTensorsFile& f, const std::string& key) {
  for (const auto& kv : f.metadata) {
    if (kv.first == key) return kv.second;
  }
  fail_msg("golden file has no metadata '%s'", key.c_str());
  return "";
}

static void check_close(const char* what, const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= kAbs + kRel * std::fabs(static_cast<double>(want[i])))) {
      fail_msg("%s[%zu]: remat %.8g, PyTorch %.8g (|diff| %.3g)", what, i, got[i], want[i], err);
    }
  }
}

static void run_golden(const char* file_name) {
  remat::SafeTensorsFile golden;
  std::string error;
  const std::string path = std::string(REMAT_TEST_DATA_DIR) + "/" + file_name;
  if (!remat::read_safetensors(path, &golden, &error)) fail_msg("%s", error.c_str());
  TrainingRun run(meta(golden, "template"), std::stoll(meta(golden, "batch")),
                  meta(golden, "optimizer"));
  const int steps = std::stoi(meta(golden, "steps"));
  uint32_t count = 0;
  remat_plan_binding_count(run.plan, REMAT_BINDING_PARAM, &count);
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info;
    remat_plan_binding(run.plan, REMAT_BINDING_PARAM, i, &info);
    const remat::SafeTensor* t = golden.find(std::string("init.") + info.name);
    if (t == nullptr) fail_msg("golden file lacks init.%s", info.name);
    assert_int_equal(
        remat_session_write_param(run.session, info.name, t->data.data(), t->data.size()),
        REMAT_OK);
  }
  for (const auto& t : golden.tensors) {
    for (const char* prefix : {"input.", "label."}) {
      if (t.name.compare(0, std::strlen(prefix), prefix) == 0) {
        run.set(t.name.substr(std::strlen(prefix)), t.data.data(), t.data.size());
      }
    }
  }
  const remat::SafeTensor* losses = golden.find("loss");
  assert_non_null(losses);
  for (int s = 0; s < steps; ++s) {
    const float loss = run.step();
    float want = 0;
    std::memcpy(&want, losses->data.data() + 4 * s, 4);
    check_close("loss", &loss, &want, 1);
  }
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info;
    remat_plan_binding(run.plan, REMAT_BINDING_PARAM, i, &info);
    const remat::SafeTensor* t = golden.find(std::string("final.") + info.name);
    if (t == nullptr) fail_msg("golden file lacks final.%s", info.name);
    // The key bias adds q.b_k to every score of a query row, which softmax cancels: its exact
    // gradient is 0, so what each side computes is rounding noise, and Adam's m / sqrt(v)
    // turns noise of either sign into a full +-lr step. Only SGD can compare it meaningfully.
    const bool adam = meta(golden, "optimizer").compare(0, 4, "adam") == 0;
    if (adam && std::strstr(info.name, "attention.self.key.bias") != nullptr) continue;
    const std::vector<float> got = run.param(info.name);
    check_close(info.name, got.data(), reinterpret_cast<const float*>(t->data.data()), got.size());
  }
  // The eval program after the steps: model.eval() in torch (batch norms on running statistics).
  const remat::SafeTensor* eval = golden.find("eval_loss");
  assert_non_null(eval);
  float evaluated = 0, want_eval = 0;
  assert_int_equal(remat_session_eval(run.session, &evaluated), REMAT_OK);
  std::memcpy(&want_eval, eval->data.data(), 4);
  check_close("eval loss", &evaluated, &want_eval, 1);
  // Buffers: batch norms' running statistics within the tolerance, their counts exactly.
  uint32_t buffers = 0;
  remat_plan_binding_count(run.plan, REMAT_BINDING_BUFFER, &buffers);
  for (uint32_t i = 0; i < buffers; ++i) {
    remat_tensor_info info;
    remat_plan_binding(run.plan, REMAT_BINDING_BUFFER, i, &info);
    const remat::SafeTensor* t = golden.find(std::string("final.") + info.name);
    if (t == nullptr) fail_msg("golden file lacks final.%s", info.name);
    std::vector<uint8_t> got(info.bytes);
    assert_int_equal(remat_session_read_param(run.session, info.name, got.data(), got.size()),
                     REMAT_OK);
    if (info.dtype == REMAT_DTYPE_I64) {
      assert_string_equal(t->dtype.c_str(), "I64");
      if (t->data != got) fail_msg("%s differs from PyTorch's", info.name);
      continue;
    }
    check_close(info.name, reinterpret_cast<const float*>(got.data()),
                reinterpret_cast<const float*>(t->data.data()), got.size() / 4);
  }
  if (meta(golden, "template").compare(0, 3, "mlp") != 0 &&
      meta(golden, "template").compare(0, 11, "transformer") != 0) {
    assert_true(buffers > 0);  // the convolutional templates' batch norms
  }
}

static void mlp_with_sgd_momentum_matches_pytorch(void**) {
  run_golden("golden_mlp_sgd.safetensors");
}
static void mlp_with_adam_matches_pytorch(void**) { run_golden("golden_mlp_adam.safetensors"); }
static void transformer_with_adamw_matches_pytorch(void**) {
  run_golden("golden_transformer_adamw.safetensors");
}
static void transformer_with_sgd_matches_pytorch(void**) {
  run_golden("golden_transformer_sgd.safetensors");
}
static void resnet_with_sgd_momentum_matches_pytorch(void**) {
  run_golden("golden_resnet_sgd.safetensors");
}
static void resnet_with_adam_matches_pytorch(void**) {
  run_golden("golden_resnet_adam.safetensors");
}
static void depthwise_separable_cnn_with_sgd_momentum_matches_pytorch(void**) {
  run_golden("golden_dscnn_sgd.safetensors");
}
static void depthwise_separable_cnn_with_adam_matches_pytorch(void**) {
  run_golden("golden_dscnn_adam.safetensors");
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_with_sgd_momentum_matches_pytorch),
      cmocka_unit_test(mlp_with_adam_matches_pytorch),
      cmocka_unit_test(transformer_with_adamw_matches_pytorch),
      cmocka_unit_test(transformer_with_sgd_matches_pytorch),
      cmocka_unit_test(resnet_with_sgd_momentum_matches_pytorch),
      cmocka_unit_test(resnet_with_adam_matches_pytorch),
      cmocka_unit_test(depthwise_separable_cnn_with_sgd_momentum_matches_pytorch),
      cmocka_unit_test(depthwise_separable_cnn_with_adam_matches_pytorch),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
