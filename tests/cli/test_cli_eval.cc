// `remat train`'s evaluation (--eval-every, --eval-data, --eval-batches) and --eval-program, as
// a user runs them.
#include "tests/cmocka_cpp.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;

namespace {

const char* const kMlp = "mlp:layers=1,width=4,in=2,classes=3";

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  return std::vector<uint8_t>(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}

// The number after |label| in |text|; fails the test when it is missing.
double after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) fail_msg("no '%s' in:\n%s", label.c_str(), text.c_str());
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

// Parameters under which every logit row is (0, 0, 1): zero weights, biases 0, 0, 1. With them
// the eval loss and accuracy follow from the labels alone, worked out here in float64.
std::string parameters_favouring_class_2() {
  remat::SafeTensorsFile params;
  const std::vector<float> w0(4 * 2, 0.0f), b0(4, 0.0f), w1(3 * 4, 0.0f), b1 = {0.0f, 0.0f, 1.0f};
  params.tensors.push_back({"fc0.weight", "F32", {4, 2}, bytes_of(w0.data(), w0.size() * 4)});
  params.tensors.push_back({"fc0.bias", "F32", {4}, bytes_of(b0.data(), b0.size() * 4)});
  params.tensors.push_back({"fc1.weight", "F32", {3, 4}, bytes_of(w1.data(), w1.size() * 4)});
  params.tensors.push_back({"fc1.bias", "F32", {3}, bytes_of(b1.data(), b1.size() * 4)});
  std::string error;
  if (!remat::write_safetensors(tmp("favour2.safetensors"), params, &error))
    fail_msg("%s", error.c_str());
  return tmp("favour2.safetensors");
}

// Three batches of four rows; the labels say class 2 for 5 of the 12 rows.
std::string eval_data() {
  remat::SafeTensorsFile data;
  const std::vector<float> x(3 * 4 * 2, 0.5f);
  const std::vector<int32_t> labels = {2, 0, 1, 2, 0, 0, 2, 1, 2, 1, 2, 0};
  data.tensors.push_back({"x", "F32", {3, 4, 2}, bytes_of(x.data(), x.size() * 4)});
  data.tensors.push_back({"labels", "I32", {3, 4}, bytes_of(labels.data(), labels.size() * 4)});
  std::string error;
  if (!remat::write_safetensors(tmp("eval.safetensors"), data, &error))
    fail_msg("%s", error.c_str());
  return tmp("eval.safetensors");
}

void eval_data_gives_the_loss_and_accuracy_the_labels_imply(void**) {
  const Result r = run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --load-params " +
                             parameters_favouring_class_2() + " --eval-data " + eval_data());
  expect(r, 0, "eval at step 0: loss ");
  // Softmax of (0, 0, 1): class 2 has e / (2 + e), the others 1 / (2 + e).
  const double e = std::exp(1.0), right = -std::log(e / (2 + e)), wrong = -std::log(1 / (2 + e));
  const double want = (5 * right + 7 * wrong) / 12;  // every batch holds 4 rows: the mean of means
  const double loss = after(r.out, "loss ");
  if (std::fabs(loss - want) > 1e-5)
    fail_msg("eval loss %.7f, float64 gives %.7f:\n%s", loss, want, r.out.c_str());
  expect(r, 0, "accuracy 41.67% (5 of 12 samples)");
  // --eval-batches takes the first batches only: labels 2, 0, 1, 2.
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --steps 0 --load-params " +
                   parameters_favouring_class_2() + " --eval-data " + eval_data() +
                   " --eval-batches 1"),
         0, "accuracy 50.00% (2 of 4 samples)");
}

void eval_every_prints_at_each_interval_and_at_the_end(void**) {
  const Result r = run_remat(std::string("train ") + kMlp +
                             " --batch 8 --steps 7 --eval-every 3 --optimizer sgd:lr=0.1");
  expect(r, 0, "eval at step 3: loss ");
  expect(r, 0, "eval at step 6: loss ");
  expect(r, 0, "eval at step 7: loss ");
  expect(r, 0, "of 64 samples)");  // --eval-batches defaults to 8 synthetic batches of 8
  if (r.out.find("eval at step 9") != std::string::npos)
    fail_msg("evaluated past the end:\n%s", r.out.c_str());
}

void evaluation_options_are_checked_before_the_first_step(void**) {
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --eval-every 2 --eval-program off"),
         2, "compiled with --eval-program off");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --eval-every 0"), 2, "--eval-every");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --eval-batches 2"), 2,
         "--eval-batches needs --eval-every or --eval-data");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --eval-data " + eval_data() +
                   " --eval-batches 4"),
         2, "--eval-batches");
  expect(run_remat(std::string("train ") + kMlp + " --batch 4 --data " + eval_data() +
                   " --eval-every 1"),
         2, "needs --eval-data");
  expect(run_remat(std::string("train ") + kMlp + " --batch 5 --eval-data " + eval_data()), 1,
         "expected F32 [STEPS, 5, 2]");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --eval-program maybe -o " +
                   tmp("p.rplan")),
         2, "--eval-program 'maybe': expected on or off");
}

void compile_and_inspect_say_whether_a_plan_has_an_eval_program(void**) {
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 -o " + tmp("eval.rplan")), 0,
         "of them the eval program's");
  // matmul (with its bias), relu, matmul (with its bias), softmax_cross_entropy.
  expect(run_remat("inspect " + tmp("eval.rplan")), 0, "(eval program: 4)");
  expect(run_remat("inspect " + tmp("eval.rplan") + " --ops"), 0,
         "eval       softmax_cross_entropy      logits, labels");
  expect(run_remat(std::string("compile ") + kMlp + " --batch 4 --eval-program off -o " +
                   tmp("bare.rplan")),
         0, "(no eval program)");
  expect(run_remat("inspect " + tmp("bare.rplan") + " --json"), 0, "\"eval_ops\": 0");
  expect(run_remat("train " + tmp("bare.rplan") + " --eval-every 1"), 2,
         "compiled with --eval-program off");
  // A format version 1 plan (a remat before the eval program) may be why there is none.
  std::vector<uint8_t> old = remat_test::file_bytes(tmp("bare.rplan"));
  assert_true(remat::fb::GetMutablePlan(old.data())->mutate_format_version(1));
  remat::seal_plan(old.data(), old.size());
  FILE* f = std::fopen(tmp("old.rplan").c_str(), "wb");
  assert_non_null(f);
  assert_int_equal(std::fwrite(old.data(), 1, old.size(), f), old.size());
  assert_int_equal(std::fclose(f), 0);
  expect(run_remat("train " + tmp("old.rplan") + " --eval-every 1"), 2,
         "compiled with --eval-program off (or by a remat older than format version 2)");
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(eval_data_gives_the_loss_and_accuracy_the_labels_imply),
      cmocka_unit_test(eval_every_prints_at_each_interval_and_at_the_end),
      cmocka_unit_test(evaluation_options_are_checked_before_the_first_step),
      cmocka_unit_test(compile_and_inspect_say_whether_a_plan_has_an_eval_program),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
