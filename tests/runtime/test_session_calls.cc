// Failure paths of calls on a session in the C ABI: inputs, steps on bad data, parameters and
// null handles each get their own status and a message naming what was wrong, and a failed call
// leaves the session as it was.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "remat/remat.h"
#include "tests/runtime/session_checks.h"

using namespace remat_test;  // the session checks shared by the session tests

namespace {

// ---- Inputs ---------------------------------------------------------------------------------

void set_input_rejects_unknown_names_wrong_sizes_and_nulls(void**) {
  OpenPlan p(kMlp);
  remat_session* s = create_expecting(p.plan, nullptr, REMAT_OK);
  std::vector<uint8_t> data(4096, 0);
  const remat_tensor_info x = bindings(p.plan, REMAT_BINDING_INPUT)[0];
  expect_call(s, remat_session_set_input(s, "no_such_input", data.data(), x.bytes),
              REMAT_ERROR_NOT_FOUND, {"'no_such_input'"});
  // A parameter is not an input.
  expect_call(s, remat_session_set_input(s, "fc0.weight", data.data(), 128), REMAT_ERROR_NOT_FOUND,
              {"'fc0.weight'"});
  for (size_t bytes :
       {size_t{0}, static_cast<size_t>(x.bytes - 1), static_cast<size_t>(x.bytes + 4)}) {
    expect_call(s, remat_session_set_input(s, x.name, data.data(), bytes),
                REMAT_ERROR_INVALID_ARGUMENT,
                {std::string("'") + x.name + "'", std::to_string(bytes) + " bytes",
                 std::to_string(x.bytes)});
  }
  expect_call(s, remat_session_set_input(s, x.name, nullptr, x.bytes), REMAT_ERROR_INVALID_ARGUMENT,
              {"data is NULL"});
  expect_call(s, remat_session_set_input(s, nullptr, data.data(), x.bytes),
              REMAT_ERROR_INVALID_ARGUMENT, {"name is NULL"});
  assert_int_equal(remat_session_set_input(nullptr, x.name, data.data(), x.bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);
  // None of those set the input: a step still refuses to run.
  const remat_tensor_info labels = bindings(p.plan, REMAT_BINDING_LABEL)[0];
  assert_int_equal(remat_session_set_input(s, labels.name, data.data(), labels.bytes), REMAT_OK);
  assert_int_equal(remat_session_step(s, nullptr), REMAT_ERROR_FAILED_PRECONDITION);
  assert_int_equal(remat_session_set_input(s, x.name, data.data(), x.bytes), REMAT_OK);
  assert_int_equal(remat_session_step(s, nullptr), REMAT_OK);
  remat_session_destroy(s);
}

void step_before_every_input_is_set_fails_its_precondition(void**) {
  OpenPlan p(kMlp);
  remat_session* s = create_expecting(p.plan, nullptr, REMAT_OK);
  float loss = 123.0f;
  const remat_tensor_info x = bindings(p.plan, REMAT_BINDING_INPUT)[0];
  const remat_tensor_info labels = bindings(p.plan, REMAT_BINDING_LABEL)[0];
  // The message names the binding that is missing, first the input, then the label.
  expect_call(s, remat_session_step(s, &loss), REMAT_ERROR_FAILED_PRECONDITION,
              {std::string("'") + x.name + "'"});
  std::vector<uint8_t> zeros(x.bytes, 0);
  assert_int_equal(remat_session_set_input(s, x.name, zeros.data(), zeros.size()), REMAT_OK);
  expect_call(s, remat_session_step(s, &loss), REMAT_ERROR_FAILED_PRECONDITION,
              {std::string("'") + labels.name + "'"});
  assert_true(loss == 123.0f);  // not written by a failed step
  assert_int_equal(remat_session_step_count(s), 0);
  assert_int_equal(remat_session_step(nullptr, &loss), REMAT_ERROR_INVALID_ARGUMENT);
  remat_session_destroy(s);
}

// A step that fails on a bad value changes no parameter or optimizer state and is not counted;
// the next good step runs as if the failed one had never been tried.
void check_bad_value_step(const char* model, const char* binding, int32_t good_range,
                          std::initializer_list<int32_t> bad_values, const char* op_name) {
  OpenPlan p(model, "adam:lr=0.01");
  Buffer persistent(p.memory.persistent_bytes);
  remat_session_options options;
  remat_session_options_init(&options);
  options.persistent = persistent.data;
  options.persistent_size = p.memory.persistent_bytes;
  remat_session* s = create_expecting(p.plan, &options, REMAT_OK);
  // A reference session over the same plan that never sees a bad value.
  remat_session* reference = create_expecting(p.plan, nullptr, REMAT_OK);
  set_all_inputs(s, p.plan, good_range);
  set_all_inputs(reference, p.plan, good_range);
  float loss = 0.0f, reference_loss = 0.0f;
  assert_int_equal(remat_session_step(s, &loss), REMAT_OK);
  assert_int_equal(remat_session_step(reference, &reference_loss), REMAT_OK);

  remat_tensor_info info{};
  for (remat_binding_kind kind : {REMAT_BINDING_INPUT, REMAT_BINDING_LABEL}) {
    for (const remat_tensor_info& b : bindings(p.plan, kind)) {
      if (strcmp(b.name, binding) == 0) info = b;
    }
  }
  assert_non_null(info.name);
  assert_int_equal(info.dtype, REMAT_DTYPE_I32);
  const std::vector<uint8_t> params_before = read_params(s, p.plan);
  const std::vector<uint8_t> persistent_before(persistent.bytes(),
                                               persistent.bytes() + p.memory.persistent_bytes);
  for (int32_t bad : bad_values) {
    std::vector<int32_t> values(info.bytes / 4);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<int32_t>(i % static_cast<size_t>(good_range));
    values.back() = bad;
    assert_int_equal(remat_session_set_input(s, binding, values.data(), info.bytes), REMAT_OK);
    expect_call(s, remat_session_step(s, &loss), REMAT_ERROR_OUT_OF_RANGE,
                {op_name, std::to_string(bad), std::to_string(good_range)});
    assert_int_equal(remat_session_step_count(s), 1);
    assert_true(read_params(s, p.plan) == params_before);
    assert_memory_equal(persistent.bytes(), persistent_before.data(), persistent_before.size());
  }
  // Good values again: the step succeeds and matches the session that never failed, bit for bit.
  set_all_inputs(s, p.plan, good_range);
  for (int step = 0; step < 2; ++step) {
    assert_int_equal(remat_session_step(s, &loss), REMAT_OK);
    assert_int_equal(remat_session_step(reference, &reference_loss), REMAT_OK);
    assert_memory_equal(&loss, &reference_loss, sizeof(float));
  }
  assert_int_equal(remat_session_step_count(s), 3);
  assert_int_equal(remat_session_step_count(reference), 3);
  assert_true(read_params(s, p.plan) == read_params(reference, p.plan));
  remat_session_destroy(reference);
  remat_session_destroy(s);
}

void label_out_of_range_fails_the_step_and_changes_nothing(void**) {
  check_bad_value_step(kMlp, "labels", kClasses, {kClasses, -1, 1000000, INT32_MIN, INT32_MAX},
                       "softmax_cross_entropy");
}

void token_id_out_of_range_fails_the_step_and_changes_nothing(void**) {
  OpenPlan p(kTransformer);
  const remat_tensor_info ids = bindings(p.plan, REMAT_BINDING_INPUT)[0];
  check_bad_value_step(kTransformer, ids.name, kVocab, {kVocab, -1, 1 << 30, INT32_MIN, INT32_MAX},
                       "embedding");
}

// ---- Parameters -----------------------------------------------------------------------------

void param_access_rejects_unknown_names_wrong_sizes_and_nulls(void**) {
  OpenPlan p(kMlp);
  remat_session* s = create_expecting(p.plan, nullptr, REMAT_OK);
  const remat_tensor_info w = bindings(p.plan, REMAT_BINDING_PARAM)[0];
  std::vector<uint8_t> data(w.bytes + 64, 0);
  const std::string quoted = std::string("'") + w.name + "'";
  expect_call(s, remat_session_read_param(s, "no_such_param", data.data(), w.bytes),
              REMAT_ERROR_NOT_FOUND, {"'no_such_param'"});
  expect_call(s, remat_session_write_param(s, "no_such_param", data.data(), w.bytes),
              REMAT_ERROR_NOT_FOUND, {"'no_such_param'"});
  // An input is not a parameter.
  expect_call(s, remat_session_write_param(s, "x", data.data(), 32), REMAT_ERROR_NOT_FOUND,
              {"'x'"});
  for (size_t bytes :
       {size_t{0}, static_cast<size_t>(w.bytes - 4), static_cast<size_t>(w.bytes + 4)}) {
    expect_call(s, remat_session_read_param(s, w.name, data.data(), bytes),
                REMAT_ERROR_INVALID_ARGUMENT,
                {quoted, std::to_string(bytes) + " bytes", std::to_string(w.bytes)});
    expect_call(s, remat_session_write_param(s, w.name, data.data(), bytes),
                REMAT_ERROR_INVALID_ARGUMENT,
                {quoted, std::to_string(bytes) + " bytes", std::to_string(w.bytes)});
  }
  expect_call(s, remat_session_read_param(s, w.name, nullptr, w.bytes),
              REMAT_ERROR_INVALID_ARGUMENT, {"out_data is NULL"});
  expect_call(s, remat_session_read_param(s, nullptr, data.data(), w.bytes),
              REMAT_ERROR_INVALID_ARGUMENT, {"name is NULL"});
  expect_call(s, remat_session_write_param(s, w.name, nullptr, w.bytes),
              REMAT_ERROR_INVALID_ARGUMENT, {"data is NULL"});
  expect_call(s, remat_session_write_param(s, nullptr, data.data(), w.bytes),
              REMAT_ERROR_INVALID_ARGUMENT, {"name is NULL"});
  assert_int_equal(remat_session_read_param(nullptr, w.name, data.data(), w.bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_write_param(nullptr, w.name, data.data(), w.bytes),
                   REMAT_ERROR_INVALID_ARGUMENT);
  // Failed writes wrote nothing.
  std::vector<uint8_t> before(w.bytes), after(w.bytes);
  remat_session_destroy(s);
  s = create_expecting(p.plan, nullptr, REMAT_OK);
  assert_int_equal(remat_session_read_param(s, w.name, before.data(), w.bytes), REMAT_OK);
  std::vector<uint8_t> ones(w.bytes + 4, 0xFF);
  assert_int_equal(remat_session_write_param(s, w.name, ones.data(), w.bytes + 4),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_write_param(s, w.name, ones.data(), w.bytes - 4),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_read_param(s, w.name, after.data(), w.bytes), REMAT_OK);
  assert_true(before == after);
  remat_session_destroy(s);
}

void params_are_left_to_the_caller_without_init(void**) {
  OpenPlan p(kMlp);
  Buffer persistent(p.memory.persistent_bytes);
  memset(persistent.data, 0xA5, p.memory.persistent_bytes);
  remat_session_options options;
  remat_session_options_init(&options);
  options.persistent = persistent.data;
  options.persistent_size = p.memory.persistent_bytes;
  options.init_params = 0;
  remat_session* s = create_expecting(p.plan, &options, REMAT_OK);
  // Nothing was initialised: the caller's bytes are still there.
  for (const remat_tensor_info& w : bindings(p.plan, REMAT_BINDING_PARAM)) {
    std::vector<uint8_t> got(w.bytes);
    assert_int_equal(remat_session_read_param(s, w.name, got.data(), got.size()), REMAT_OK);
    assert_true(got == std::vector<uint8_t>(w.bytes, 0xA5));
  }
  // What the caller writes is what it reads back, for every parameter.
  uint8_t seed = 1;
  for (const remat_tensor_info& w : bindings(p.plan, REMAT_BINDING_PARAM)) {
    std::vector<uint8_t> value(w.bytes), got(w.bytes);
    for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<uint8_t>(seed * 31 + i);
    ++seed;
    assert_int_equal(remat_session_write_param(s, w.name, value.data(), value.size()), REMAT_OK);
    assert_int_equal(remat_session_read_param(s, w.name, got.data(), got.size()), REMAT_OK);
    assert_true(got == value);
  }
  remat_session_destroy(s);
  // With init, the same region is overwritten by the plan's initial values.
  memset(persistent.data, 0xA5, p.memory.persistent_bytes);
  options.init_params = 1;
  s = create_expecting(p.plan, &options, REMAT_OK);
  const remat_tensor_info w0 = bindings(p.plan, REMAT_BINDING_PARAM)[0];
  std::vector<uint8_t> got(w0.bytes);
  assert_int_equal(remat_session_read_param(s, w0.name, got.data(), got.size()), REMAT_OK);
  assert_false(got == std::vector<uint8_t>(w0.bytes, 0xA5));
  remat_session_destroy(s);
}

// ---- Null handles ---------------------------------------------------------------------------

void null_sessions_are_handled(void**) {
  remat_session_destroy(nullptr);
  assert_non_null(remat_session_last_error(nullptr));
  assert_true(remat_session_last_error(nullptr)[0] != '\0');
  assert_int_equal(remat_session_step_count(nullptr), 0);
  OpenPlan p(kMlp);
  remat_session* s = create_expecting(p.plan, nullptr, REMAT_OK);
  assert_string_equal(remat_session_last_error(s), "");
  assert_int_equal(remat_session_step_count(s), 0);
  remat_session_destroy(s);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(set_input_rejects_unknown_names_wrong_sizes_and_nulls),
      cmocka_unit_test(step_before_every_input_is_set_fails_its_precondition),
      cmocka_unit_test(label_out_of_range_fails_the_step_and_changes_nothing),
      cmocka_unit_test(token_id_out_of_range_fails_the_step_and_changes_nothing),
      cmocka_unit_test(param_access_rejects_unknown_names_wrong_sizes_and_nulls),
      cmocka_unit_test(params_are_left_to_the_caller_without_init),
      cmocka_unit_test(null_sessions_are_handled),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
