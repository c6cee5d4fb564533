// Backend conformance, the checks a step makes of its data: ids and labels out of range, the
// non-finite guard (finite_check, docs/nonfinite.md), and the learning rate set at run time.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "runtime/backend_registry.h"
#include "backends/device_profiles.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

// Sets every binding from step 0 of the task, then overwrites |name|'s int32 element |at|.
void feed_with_bad_value(Run& run, const std::string& model, const char* name, int32_t value) {
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  const auto names = task.names();
  auto values = task.batch(0);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) memcpy(values[i].data() + 4 * 3, &value, sizeof(value));
    assert_int_equal(
        remat_session_set_input(run.session, names[i].c_str(), values[i].data(), values[i].size()),
        REMAT_OK);
  }
}

void a_label_out_of_range_is_a_step_error(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (int32_t bad : {4, -1}) {
    Run run(kModels[0], kOptimizers[0], "none", g_backend);
    feed_with_bad_value(run, kModels[0], "labels", bad);
    assert_int_equal(remat_session_step(run.session, nullptr), REMAT_ERROR_OUT_OF_RANGE);
    const char* message = remat_session_last_error(run.session);
    printf("label %d: %s\n", bad, message);
    assert_non_null(strstr(message, "label"));
    assert_non_null(strstr(message, "position 3"));
  }
}

void a_token_id_out_of_range_is_a_step_error(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  Run run(kModels[2], kOptimizers[1], "none", g_backend);
  feed_with_bad_value(run, kModels[2], "tokens", 40);
  assert_int_equal(remat_session_step(run.session, nullptr), REMAT_ERROR_OUT_OF_RANGE);
  const char* message = remat_session_last_error(run.session);
  printf("token 40: %s\n", message);
  assert_non_null(strstr(message, "id 40"));
}

// embedding_grad over ids with three bad ones, where a GPU backend splits the vocabulary
// into ranges of several ids (ops/data.cc): the backend reports the first, as the CPU words it.
void embedding_grad_reports_the_first_bad_id_as_the_cpu_does(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr int64_t kCount = 24, kH = 257, kVocab = 600;
  constexpr uint64_t kArena = 1 << 20, kPersistent = 256;
  alignas(256) static uint8_t arena[2][kArena], persistent[2][kPersistent];
  remat_test::Layout layout;
  const remat::TensorRef dy = layout.add({kCount, kH});
  const remat::TensorRef ids = layout.add({kCount}, REMAT_DTYPE_I32);
  const remat::TensorRef dtable = layout.add({kVocab, kH});
  const remat::OpCall call =
      remat_test::make_call(remat::OpCode::kEmbeddingGrad, 12, {&dy, &ids}, {&dtable}, {}, {});
  const std::vector<float> ones(kCount * kH, 1.0f);
  std::vector<int32_t> id_data(kCount);
  for (int64_t j = 0; j < kCount; ++j) id_data[static_cast<size_t>(j)] = (j * 31) % kVocab;
  id_data[17] = 1000;
  id_data[9] = kVocab;
  id_data[5] = -1;
  std::string messages[2];
  for (int b = 0; b < 2; ++b) {
    const std::string backend = b == 0 ? "cpu" : g_backend;
    const remat::RegionSetup regions =
        regions_for(backend, arena[b], kArena, persistent[b], kPersistent, 256);
    char text[512] = "";
    remat::ErrorBuffer err{text, sizeof(text)};
    remat::Backend* backend_object = nullptr;
    if (remat::create_backend(backend.c_str(), regions, &backend_object, &err) != REMAT_OK)
      fail_msg("create: %s", text);
    remat_test::upload(backend_object, dy, ones.data());
    remat_test::upload(backend_object, ids, id_data.data());
    remat_status status = backend_object->run_op(call, remat::StepContext{kSeed, 0}, &err);
    const remat_status synced = backend_object->sync(&err);
    if (status == REMAT_OK) status = synced;
    remat::destroy_backend(backend_object);
    printf("%s: %s\n", backend.c_str(), text);
    assert_int_equal(status, REMAT_ERROR_OUT_OF_RANGE);
    messages[b] = text;
  }
  assert_non_null(strstr(messages[0].c_str(), "id -1 at position 5 outside [0, 600)"));
  assert_string_equal(messages[0].c_str(), messages[1].c_str());
}

// finite_check on data with NaN and infinities: the backend stops (or reports at sync) with
// REMAT_ERROR_NONFINITE for the smallest bad position, worded and placed as on the CPU; on f32
// data, and on bf16 and f16 data where the backend runs 16-bit floats (widened: the report
// reads the element's float32 value).
void finite_check_reports_the_first_nonfinite_element_as_the_cpu_does(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr uint64_t kArena = 8192, kPersistent = 256;
  alignas(256) static uint8_t arena[2][kArena], persistent[2][kPersistent];
  const remat::DeviceProfile* profile = remat::find_device_profile(g_backend.c_str());
  if (profile == nullptr) fail_msg("backend %s has no device profile", g_backend.c_str());
  // Each dtype's 0.5, 1, NaN, infinity and -infinity.
  const struct {
    remat_dtype dtype;
    uint32_t half, one, nan, inf, minus_inf;
  } encodings[] = {
      {REMAT_DTYPE_F32, 0x3F000000u, 0x3F800000u, 0x7FC00000u, 0x7F800000u, 0xFF800000u},
      {REMAT_DTYPE_BF16, 0x3F00u, 0x3F80u, 0x7FC0u, 0x7F80u, 0xFF80u},
      {REMAT_DTYPE_F16, 0x3800u, 0x3C00u, 0x7E00u, 0x7C00u, 0xFC00u},
  };
  for (const auto& enc : encodings) {
    if (enc.dtype != REMAT_DTYPE_F32 && !profile->half_floats) continue;
    const size_t size = enc.dtype == REMAT_DTYPE_F32 ? 4 : 2;
    // 1000 elements of 0.5 but NaN at 17, -inf at 400 and inf at 900, in |size| bytes each.
    const auto fill = [&](uint32_t value) {
      std::vector<uint8_t> bytes(1000 * size);
      for (size_t i = 0; i < 1000; ++i) memcpy(&bytes[i * size], &value, size);
      return bytes;
    };
    std::vector<uint8_t> data = fill(enc.half);
    memcpy(&data[900 * size], &enc.inf, size);
    memcpy(&data[400 * size], &enc.minus_inf, size);
    memcpy(&data[17 * size], &enc.nan, size);
    const std::vector<uint8_t> clean = fill(enc.one);
    remat::TensorRef x = bytes_tensor(remat::Region::kArena, 256, 4000);
    x.dtype = static_cast<uint8_t>(enc.dtype);
    x.bytes = data.size();
    const remat::OpCall call = make_call(remat::OpCode::kFiniteCheck, 12, &x, nullptr);
    std::string messages[2];
    for (int b = 0; b < 2; ++b) {
      const std::string backend = b == 0 ? "cpu" : g_backend;
      const remat::RegionSetup regions =
          regions_for(backend, arena[b], kArena, persistent[b], kPersistent, 256);
      char text[512] = "";
      remat::ErrorBuffer err{text, sizeof(text)};
      remat::Backend* backend_object = nullptr;
      if (remat::create_backend(backend.c_str(), regions, &backend_object, &err) != REMAT_OK)
        fail_msg("create: %s", text);
      remat_status status = backend_object->prepare(&call, 1, &err);
      if (status == REMAT_OK)
        status = backend_object->upload(x.region, x.offset, data.data(), x.bytes, &err);
      if (status == REMAT_OK)
        status = backend_object->run_op(call, remat::StepContext{kSeed, 0}, &err);
      const remat_status synced = backend_object->sync(&err);
      if (status == REMAT_OK) status = synced;
      // Clean data after the report: the report was cleared, nothing sticks to the next op.
      backend_object->upload(x.region, x.offset, clean.data(), x.bytes, &err);
      remat::ErrorBuffer after_err{text + 256, 256};
      remat_status after = backend_object->run_op(call, remat::StepContext{kSeed, 1}, &after_err);
      if (after == REMAT_OK) after = backend_object->sync(&after_err);
      const uint32_t failed_op = err.failed_op;
      remat::destroy_backend(backend_object);
      printf("%s, dtype %d: %s\n", backend.c_str(), static_cast<int>(enc.dtype), text);
      assert_int_equal(status, REMAT_ERROR_NONFINITE);
      assert_int_equal(failed_op, 13);
      assert_int_equal(after, REMAT_OK);
      messages[b] = text;
    }
    assert_non_null(strstr(messages[0].c_str(), "element 17 is nan"));
    assert_string_equal(messages[0].c_str(), messages[1].c_str());
  }
}

// The state's tensors, without its header (which holds the step count) and checksum.
std::vector<uint8_t> state_tensors(remat_session* session) {
  std::vector<uint8_t> state;
  if (remat_session_save_state(session, append_state, &state) != REMAT_OK) {
    fail_msg("save_state: %s", remat_session_last_error(session));
  }
  return std::vector<uint8_t>(state.begin() + 48, state.end() - 4);
}

// A NaN in the input data reaches the loss (relu keeps NaN, as torch's does): the step says
// so naming the loss, no parameter or optimizer state changes, the step count moves on, and
// the next step with good data trains.
void a_nan_in_the_data_skips_the_update_and_names_the_loss(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = "mlp:layers=2,width=8,in=4,classes=3";
  Run run(model, kOptimizers[1], "none", g_backend);
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  run.feed(task, 0);
  assert_int_equal(remat_session_step(run.session, nullptr), REMAT_OK);
  const std::vector<uint8_t> before = state_tensors(run.session);
  auto values = task.batch(1);
  const float nan = NAN;
  memcpy(values[0].data() + 4 * 5, &nan, sizeof(nan));
  assert_string_equal(task.names()[0].c_str(), "x");
  for (size_t i = 0; i < values.size(); ++i) {
    remat_session_set_input(run.session, task.names()[i].c_str(), values[i].data(),
                            values[i].size());
  }
  float loss = 0.0f;
  assert_int_equal(remat_session_step(run.session, &loss), REMAT_ERROR_NONFINITE);
  const char* message = remat_session_last_error(run.session);
  printf("%s: %s\n", g_backend.c_str(), message);
  assert_true(isnan(loss));
  assert_non_null(strstr(message, "step 2: tensor 'loss' is not finite: element 0 is nan"));
  assert_non_null(strstr(message, "no parameter was updated"));
  assert_int_equal(remat_session_step_count(run.session), 2);
  assert_true(state_tensors(run.session) == before);
  run.feed(task, 2);
  assert_int_equal(remat_session_step(run.session, &loss), REMAT_OK);
  assert_true(isfinite(loss));
  assert_true(state_tensors(run.session) != before);
}

// A finite loss whose gradient overflows: the head's weights (+-3e38) and a hidden layer of
// constant 0.01 give logits near +-2.4e37, and the hidden layer's bias gradient 8 x 7.5e37 =
// inf. With checks on, the step stops before that gradient's update: the head (whose
// gradients are finished first, and finite) is updated, the rest is not; with atomic checks
// nothing is.
void a_nonfinite_gradient_stops_the_updates_from_its_own_on(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
#if defined(REMAT_FLOAT_SUMS)
  // Its loss, a mean of terms near 5e37, is finite in double sums only: with float sums
  // (-Dfloat_sums=true) the loss overflows first, which the finite checks report instead.
  skip();
#endif
  const std::string model = "mlp:layers=2,width=8,in=4,classes=2";
  for (const char* checks : {"on", "atomic"}) {
    Run run(model, kOptimizers[0], std::string("none/checks=") + checks, g_backend);
    const std::vector<float> zero(64, 0.0f), hundredth(8, 0.01f), head_bias(2, 0.0f);
    std::vector<float> head(16, 3e38f);
    for (size_t j = 8; j < 16; ++j) head[j] = -3e38f;
    remat_session_write_param(run.session, "fc1.weight", zero.data(), 64 * 4);
    remat_session_write_param(run.session, "fc1.bias", hundredth.data(), 8 * 4);
    remat_session_write_param(run.session, "fc2.weight", head.data(), 16 * 4);
    remat_session_write_param(run.session, "fc2.bias", head_bias.data(), 2 * 4);
    remat::io::SyntheticTask task(model, kBatch, kSeed);
    run.feed(task, 0);
    const std::vector<int32_t> ones(kBatch, 1);
    remat_session_set_input(run.session, "labels", ones.data(), ones.size() * 4);
    std::vector<float> fc0_before(32), fc1_before(8), head_bias_after(2), fc0_after(32),
        fc1_after(8);
    remat_session_read_param(run.session, "fc0.weight", fc0_before.data(), 32 * 4);
    float loss = 0.0f;
    assert_int_equal(remat_session_step(run.session, &loss), REMAT_ERROR_NONFINITE);
    const char* message = remat_session_last_error(run.session);
    printf("%s, checks %s: loss %g: %s\n", g_backend.c_str(), checks, static_cast<double>(loss),
           message);
    assert_true(isfinite(loss));
    assert_non_null(strstr(message, "tensor 'grad.fc1."));
    remat_session_read_param(run.session, "fc2.bias", head_bias_after.data(), 2 * 4);
    remat_session_read_param(run.session, "fc1.bias", fc1_after.data(), 8 * 4);
    remat_session_read_param(run.session, "fc0.weight", fc0_after.data(), 32 * 4);
    assert_true(fc1_after == hundredth);
    assert_true(fc0_after == fc0_before);
    const bool head_updated = head_bias_after != head_bias;
    assert_int_equal(head_updated, strcmp(checks, "on") == 0);
    assert_non_null(strstr(
        message, head_updated ? "2 parameters had been updated" : "no parameter was updated"));
  }
}

// A learning rate set between steps equals the same rate compiled into the plan, byte for byte;
// bad rates are refused and change nothing.
void a_learning_rate_set_at_run_time_equals_the_compiled_one(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = kModels[0];
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  for (const char* kind : {"sgd:lr=%g,momentum=0.9", "adamw:lr=%g,weight_decay=0.01"}) {
    const float rate = 0.02f;
    char compiled[64];
    snprintf(compiled, sizeof(compiled), kind, static_cast<double>(rate));
    std::vector<uint8_t> want;
    {
      Run reference(model, compiled, "none", g_backend);
      for (int s = 0; s < 3; ++s) {
        reference.feed(task, static_cast<uint64_t>(s));
        assert_int_equal(remat_session_step(reference.session, nullptr), REMAT_OK);
      }
      want = reference.params();
    }
    char optimizer[64];
    snprintf(optimizer, sizeof(optimizer), kind, 0.5);
    Run run(model, optimizer, "none", g_backend);
    float lr = 0.0f;
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == 0.5f);
    for (float bad : {-0.1f, NAN, INFINITY}) {
      assert_int_equal(remat_session_set_learning_rate(run.session, bad),
                       REMAT_ERROR_INVALID_ARGUMENT);
      assert_non_null(strstr(remat_session_last_error(run.session), "set_learning_rate"));
    }
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == 0.5f);
    for (int s = 0; s < 3; ++s) {
      assert_int_equal(remat_session_set_learning_rate(run.session, rate), REMAT_OK);
      run.feed(task, static_cast<uint64_t>(s));
      assert_int_equal(remat_session_step(run.session, nullptr), REMAT_OK);
    }
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == rate);
    if (run.params() != want)
      fail_msg("%s on %s: run-time rates differ from compiled ones", kind, g_backend.c_str());
  }
  assert_int_equal(remat_session_set_learning_rate(nullptr, 0.1f), REMAT_ERROR_INVALID_ARGUMENT);
  float lr = 0.0f;
  assert_int_equal(remat_session_learning_rate(nullptr, &lr), REMAT_ERROR_INVALID_ARGUMENT);
}

}  // namespace

const struct CMUnitTest kStepCheckTests[] = {
    cmocka_unit_test(a_label_out_of_range_is_a_step_error),
    cmocka_unit_test(a_token_id_out_of_range_is_a_step_error),
    cmocka_unit_test(embedding_grad_reports_the_first_bad_id_as_the_cpu_does),
    cmocka_unit_test(finite_check_reports_the_first_nonfinite_element_as_the_cpu_does),
    cmocka_unit_test(a_nan_in_the_data_skips_the_update_and_names_the_loss),
    cmocka_unit_test(a_nonfinite_gradient_stops_the_updates_from_its_own_on),
    cmocka_unit_test(a_learning_rate_set_at_run_time_equals_the_compiled_one),
};
const size_t kStepCheckTestCount = sizeof(kStepCheckTests) / sizeof(kStepCheckTests[0]);

}  // namespace conformance
