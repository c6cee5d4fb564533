// Backend conformance, the eval program (docs/eval.md): its loss is the step's forward loss bit
// for bit, it leaves no trace in training, dropout is off in it, its logits are the model's
// (against a float64 forward pass), and its calls refuse what they cannot do.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "tests/backends/conformance_harness.h"

namespace conformance {
namespace {

// |model| without its ",dropout=P" key.
std::string without_dropout(const std::string& model) {
  const size_t at = model.find(",dropout=");
  if (at == std::string::npos) return model;
  const size_t end = model.find(',', at + 1);
  return model.substr(0, at) + (end == std::string::npos ? "" : model.substr(end));
}

float eval_loss(Run& run) {
  float loss = NAN;
  if (remat_session_eval(run.session, &loss) != REMAT_OK) {
    fail_msg("eval on %s: %s", g_backend.c_str(), remat_session_last_error(run.session));
  }
  return loss;
}

std::vector<float> read_logits(Run& run) {
  remat_tensor_info info;
  assert_int_equal(remat_plan_binding(run.plan, REMAT_BINDING_OUTPUT, 0, &info), REMAT_OK);
  assert_string_equal(info.name, "logits");
  std::vector<float> logits(info.bytes / sizeof(float));
  if (remat_session_read_output(run.session, "logits", logits.data(), info.bytes) != REMAT_OK) {
    fail_msg("read_output on %s: %s", g_backend.c_str(), remat_session_last_error(run.session));
  }
  return logits;
}

std::vector<uint8_t> state_of(Run& run) {
  std::vector<uint8_t> state;
  assert_int_equal(remat_session_save_state(run.session, append_state, &state), REMAT_OK);
  return state;
}

// Same parameters, same batch, no dropout: the eval program runs the step's forward kernels on
// the step's inputs, so its loss is the loss the step then reports, to the bit. (Not with batch
// norms, which evaluate with their running statistics: test_golden.cc compares that with torch.)
void eval_loss_is_the_next_steps_loss_bit_for_bit(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* with_dropout : kModels) {
    const std::string model = without_dropout(with_dropout);
    for (const char* strategy : {"none", "sqrt"}) {
      Run run(model, kOptimizers[1], strategy, g_backend);
      if (!run.buffers().empty()) continue;
      remat::io::SyntheticTask task(model, kBatch, kSeed);
      for (uint64_t s = 0; s < 3; ++s) {
        run.feed(task, s);
        const float evaluated = eval_loss(run);
        float stepped = NAN;
        assert_int_equal(remat_session_step(run.session, &stepped), REMAT_OK);
        if (memcmp(&evaluated, &stepped, sizeof(float)) != 0) {
          fail_msg("%s (%s) on %s, step %llu: eval loss %.9g, step loss %.9g", model.c_str(),
                   strategy, g_backend.c_str(), static_cast<unsigned long long>(s), evaluated,
                   stepped);
        }
      }
    }
  }
}

// Evaluating between steps (on other batches) changes no parameter, optimizer state or step
// count: training with evaluations ends in the bytes of training without them.
void eval_between_steps_leaves_training_byte_identical(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* model : kModels) {
    for (const char* strategy : {"none", "sqrt"}) {
      Run plain(model, kOptimizers[1], strategy, g_backend),
          evaluated(model, kOptimizers[1], strategy, g_backend);
      remat::io::SyntheticTask task(model, kBatch, kSeed);
      for (uint64_t s = 0; s < static_cast<uint64_t>(kSteps); ++s) {
        plain.feed(task, s);
        assert_int_equal(remat_session_step(plain.session, nullptr), REMAT_OK);
        evaluated.feed(task, 1000 + s);
        const std::vector<uint8_t> before = state_of(evaluated);
        eval_loss(evaluated);
        if (state_of(evaluated) != before)
          fail_msg("%s on %s: an eval changed the state", model, g_backend.c_str());
        evaluated.feed(task, s);
        assert_int_equal(remat_session_step(evaluated.session, nullptr), REMAT_OK);
      }
      assert_int_equal(remat_session_step_count(evaluated.session), kSteps);
      if (state_of(plain) != state_of(evaluated)) {
        fail_msg("%s (%s) on %s: evaluating between steps changed the training", model, strategy,
                 g_backend.c_str());
      }
    }
  }
}

// Dropout is off in the eval program: with the parameters of a model with dropout, its loss and
// logits are those of the same model without dropout, to the bit.
void eval_has_no_dropout(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* model : kModels) {
    if (std::string(model).find("dropout=") == std::string::npos) continue;  // nothing to leave out
    Run with(model, kOptimizers[0], "none", g_backend),
        without(without_dropout(model), kOptimizers[0], "none", g_backend);
    remat::io::SyntheticTask task(model, kBatch, kSeed);
    for (uint64_t s = 0; s < 2; ++s) {
      with.feed(task, s);
      assert_int_equal(remat_session_step(with.session, nullptr), REMAT_OK);
    }
    uint32_t count = 0;
    remat_plan_binding_count(with.plan, REMAT_BINDING_PARAM, &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      remat_plan_binding(with.plan, REMAT_BINDING_PARAM, i, &info);
      std::vector<uint8_t> bytes(info.bytes);
      assert_int_equal(
          remat_session_read_param(with.session, info.name, bytes.data(), bytes.size()), REMAT_OK);
      assert_int_equal(
          remat_session_write_param(without.session, info.name, bytes.data(), bytes.size()),
          REMAT_OK);
    }
    with.feed(task, 7);
    without.feed(task, 7);
    const float a = eval_loss(with), b = eval_loss(without);
    if (memcmp(&a, &b, sizeof(float)) != 0 || read_logits(with) != read_logits(without)) {
      fail_msg(
          "%s on %s: eval with dropout in the model (loss %.9g) differs from the model without "
          "(%.9g)",
          model, g_backend.c_str(), a, b);
    }
  }
}

// The logits and loss of a two-layer MLP against a float64 forward pass on the host from the
// parameters the session holds: an independent computation, so a tolerance, not bytes.
void eval_logits_and_loss_match_a_float64_forward_pass(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = "mlp:layers=1,width=16,in=8,classes=5";
  const int64_t in = 8, width = 16, classes = 5;
  Run run(model, kOptimizers[0], "none", g_backend);
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  run.feed(task, 0);
  assert_int_equal(remat_session_step(run.session, nullptr),
                   REMAT_OK);  // parameters moved off their init
  run.feed(task, 1);
  const float loss = eval_loss(run);
  const std::vector<float> logits = read_logits(run);
  auto param = [&](const char* name, size_t n) {
    std::vector<float> v(n);
    assert_int_equal(remat_session_read_param(run.session, name, v.data(), n * sizeof(float)),
                     REMAT_OK);
    return v;
  };
  const std::vector<float> w0 = param("fc0.weight", width * in), b0 = param("fc0.bias", width);
  const std::vector<float> w1 = param("fc1.weight", classes * width),
                           b1 = param("fc1.bias", classes);
  const std::vector<std::vector<uint8_t>> batch = task.batch(1);
  const float* x = reinterpret_cast<const float*>(batch[0].data());
  const int32_t* labels = reinterpret_cast<const int32_t*>(batch[1].data());
  double loss_sum = 0;
  for (int64_t r = 0; r < kBatch; ++r) {
    double h[16], z[5], top = -INFINITY;
    for (int64_t j = 0; j < width; ++j) {
      double a = b0[j];
      for (int64_t k = 0; k < in; ++k) a += static_cast<double>(w0[j * in + k]) * x[r * in + k];
      h[j] = a > 0 ? a : 0;
    }
    for (int64_t c = 0; c < classes; ++c) {
      z[c] = b1[c];
      for (int64_t j = 0; j < width; ++j) z[c] += static_cast<double>(w1[c * width + j]) * h[j];
      top = fmax(top, z[c]);
      const double got = logits[r * classes + c];
      if (fabs(got - z[c]) > 1e-5 * (1 + fabs(z[c]))) {
        fail_msg("%s: logit [%lld, %lld] is %.9g, float64 gives %.9g", g_backend.c_str(),
                 static_cast<long long>(r), static_cast<long long>(c), got, z[c]);
      }
    }
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += exp(z[c] - top);
    loss_sum += top + log(sum) - z[labels[r]];
  }
  const double want = loss_sum / static_cast<double>(kBatch);
  if (fabs(loss - want) > 1e-5 * (1 + fabs(want)))
    fail_msg("%s: eval loss %.9g, float64 gives %.9g", g_backend.c_str(), loss, want);
}

// Every way the eval calls refuse: no session, a plan without an eval program, inputs not set,
// outputs asked for before an eval or after a step, unknown names, wrong sizes, labels out of
// range.
void eval_and_read_output_refuse_what_they_cannot_do(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  float loss = 0;
  std::vector<float> logits(kBatch * 4);
  const size_t bytes = logits.size() * sizeof(float);
  assert_int_equal(remat_session_eval(nullptr, &loss), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_read_output(nullptr, "logits", logits.data(), bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);

  Run bare(kModels[0], kOptimizers[0], "none/eval=off", g_backend);
  uint32_t outputs = 7;
  assert_int_equal(remat_plan_binding_count(bare.plan, REMAT_BINDING_OUTPUT, &outputs), REMAT_OK);
  assert_int_equal(outputs, 0);
  assert_int_equal(remat_session_eval(bare.session, &loss), REMAT_ERROR_NOT_FOUND);
  assert_non_null(strstr(remat_session_last_error(bare.session), "no eval program"));

  Run run(kModels[0], kOptimizers[0], "none", g_backend);
  assert_int_equal(remat_session_eval(run.session, &loss), REMAT_ERROR_FAILED_PRECONDITION);
  assert_non_null(strstr(remat_session_last_error(run.session), "input 'x' has never been set"));
  remat::io::SyntheticTask task(kModels[0], kBatch, kSeed);
  run.feed(task, 0);
  assert_int_equal(remat_session_read_output(run.session, "logits", logits.data(), bytes),
                   REMAT_ERROR_FAILED_PRECONDITION);
  assert_non_null(strstr(remat_session_last_error(run.session), "no eval has run"));
  assert_int_equal(remat_session_eval(run.session, nullptr), REMAT_OK);  // the loss is optional
  assert_int_equal(remat_session_read_output(run.session, "logits", logits.data(), bytes),
                   REMAT_OK);
  assert_int_equal(remat_session_read_output(run.session, "probs", logits.data(), bytes),
                   REMAT_ERROR_NOT_FOUND);
  assert_non_null(strstr(remat_session_last_error(run.session), "no output 'probs'"));
  assert_int_equal(remat_session_read_output(run.session, "logits", logits.data(), bytes - 4),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(remat_session_last_error(run.session), "the output has"));
  assert_int_equal(remat_session_read_output(run.session, nullptr, logits.data(), bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_read_output(run.session, "logits", nullptr, bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_step(run.session, nullptr), REMAT_OK);
  assert_int_equal(remat_session_read_output(run.session, "logits", logits.data(), bytes),
                   REMAT_ERROR_FAILED_PRECONDITION);

  std::vector<std::vector<uint8_t>> values = task.batch(1);
  const int32_t bad = 4;  // classes=4
  memcpy(values[1].data() + 4 * 3, &bad, sizeof(bad));
  assert_int_equal(
      remat_session_set_input(run.session, "labels", values[1].data(), values[1].size()), REMAT_OK);
  assert_int_equal(remat_session_eval(run.session, &loss), REMAT_ERROR_OUT_OF_RANGE);
  assert_non_null(strstr(remat_session_last_error(run.session), "position 3"));
  assert_int_equal(remat_session_read_output(run.session, "logits", logits.data(), bytes),
                   REMAT_ERROR_FAILED_PRECONDITION);
  assert_int_equal(remat_session_step_count(run.session), 1);
}

}  // namespace

const struct CMUnitTest kEvalTests[] = {
    cmocka_unit_test(eval_loss_is_the_next_steps_loss_bit_for_bit),
    cmocka_unit_test(eval_between_steps_leaves_training_byte_identical),
    cmocka_unit_test(eval_has_no_dropout),
    cmocka_unit_test(eval_logits_and_loss_match_a_float64_forward_pass),
    cmocka_unit_test(eval_and_read_output_refuse_what_they_cannot_do),
};
const size_t kEvalTestCount = sizeof(kEvalTests) / sizeof(kEvalTests[0]);

}  // namespace conformance
