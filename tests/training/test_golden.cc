// Training steps against PyTorch: tests/data/golden_*.safetensors, made by make_golden.py in
// float64 from the same initial parameters and batch. remat runs in float32, so the
// comparison has a tolerance; everything else about the step (formulas, optimizer) must match.
#include "tests/cmocka_cpp.h"

#include <cmath>
#include <cstdio>
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

// Writes |golden|'s init.<param> into each parameter of |run| and sets its input. and label.
// tensors as the bindings of those names.
static void start_from(const remat::SafeTensorsFile& golden, TrainingRun& run) {
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
  start_from(golden, run);
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

// Largest |a - b| over |n| floats.
static double max_diff(const float* a, const float* b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; ++i) d = std::fmax(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

// How far remat's --precision bf16 may be from PyTorch's bf16 autocast after three steps: a
// parameter within kUpdateShare of its own largest update plus kFloorShare of the model's
// largest update (a parameter whose true gradient is 0, such as the key bias, which softmax
// cancels, moves by rounding noise only). The two round at different places: autocast keeps
// float32 wherever a float32 tensor meets a bf16 one (a residual sum, a layer norm after it) and
// rounds a weight's gradient to bf16 before widening it; remat stores every activation in bf16
// and sums weight gradients in float32. Each rounding is worth 2^-9 of a value.
constexpr double kUpdateShare = 0.1;
constexpr double kFloorShare = 0.01;

// A bf16 autocast golden (make_golden.py make_autocast): remat at --precision bf16 from the same
// parameters and batch, each parameter within the tolerance above; prints the largest share of
// its tolerance a parameter used, and the same for remat in float32 (no rounding at all). Where
// |closer_than_float32|, bf16 must also be the closer of the two: remat rounds where autocast
// does.
static void run_golden_bf16(const char* file_name, bool closer_than_float32) {
  remat::SafeTensorsFile golden;
  std::string error;
  const std::string path = std::string(REMAT_TEST_DATA_DIR) + "/" + file_name;
  if (!remat::read_safetensors(path, &golden, &error)) fail_msg("%s", error.c_str());
  assert_string_equal(meta(golden, "precision").c_str(), "bf16");
  double largest_update = 0;
  for (const auto& t : golden.tensors) {
    if (t.name.compare(0, 6, "final.") != 0) continue;
    const remat::SafeTensor* init = golden.find("init." + t.name.substr(6));
    if (init == nullptr) fail_msg("golden file lacks init.%s", t.name.substr(6).c_str());
    largest_update =
        std::fmax(largest_update,
                  max_diff(reinterpret_cast<const float*>(t.data.data()),
                           reinterpret_cast<const float*>(init->data.data()), t.data.size() / 4));
  }
  double used[2] = {0, 0};
  for (int precision = 0; precision < 2; ++precision) {
    remat::compiler::CompileOptions o;
    o.model = meta(golden, "template");
    o.batch = std::stoll(meta(golden, "batch"));
    o.optimizer = meta(golden, "optimizer");
    o.precision =
        precision == 0 ? remat::compiler::Precision::kBf16 : remat::compiler::Precision::kFp32;
    TrainingRun run(o);
    uint32_t count = 0;
    remat_plan_binding_count(run.plan, REMAT_BINDING_PARAM, &count);
    start_from(golden, run);
    const int steps = std::stoi(meta(golden, "steps"));
    for (int s = 0; s < steps; ++s) run.step();
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      remat_plan_binding(run.plan, REMAT_BINDING_PARAM, i, &info);
      const remat::SafeTensor* init = golden.find(std::string("init.") + info.name);
      const remat::SafeTensor* final = golden.find(std::string("final.") + info.name);
      if (final == nullptr) fail_msg("golden file lacks final.%s", info.name);
      const float* want = reinterpret_cast<const float*>(final->data.data());
      const std::vector<float> got = run.param(info.name);
      const double update =
          max_diff(want, reinterpret_cast<const float*>(init->data.data()), got.size());
      const double tolerance = kUpdateShare * update + kFloorShare * largest_update;
      const double diff = max_diff(got.data(), want, got.size());
      if (precision == 0 && !(diff <= tolerance)) {
        fail_msg(
            "%s: remat bf16 differs from PyTorch's bf16 autocast by %.3g; its largest "
            "update is %.3g, the tolerance %.3g",
            info.name, diff, update, tolerance);
      }
      used[precision] = std::fmax(used[precision], diff / tolerance);
    }
  }
  std::printf(
      "%s: remat bf16 used %.3g of its tolerance to PyTorch's bf16 autocast (remat float32: "
      "%.3g)\n",
      file_name, used[0], used[1]);
  if (closer_than_float32 && !(used[0] < used[1])) {
    fail_msg("%s: remat bf16 is no closer to PyTorch's bf16 autocast than remat float32",
             file_name);
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

static void mlp_in_bf16_matches_pytorch_autocast(void**) {
  run_golden_bf16("golden_mlp_sgd_bf16.safetensors", true);
}
// remat's bf16 residual stream (autocast keeps it float32) makes this one no closer than float32.
static void transformer_in_bf16_matches_pytorch_autocast(void**) {
  run_golden_bf16("golden_transformer_sgd_bf16.safetensors", false);
}
static void resnet_in_bf16_matches_pytorch_autocast(void**) {
  run_golden_bf16("golden_resnet_sgd_bf16.safetensors", true);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_in_bf16_matches_pytorch_autocast),
      cmocka_unit_test(transformer_in_bf16_matches_pytorch_autocast),
      cmocka_unit_test(resnet_in_bf16_matches_pytorch_autocast),
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
