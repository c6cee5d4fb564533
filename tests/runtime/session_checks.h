// Shared by the session C ABI tests: plans compiled and opened, aligned buffers, and checks of
// a call's status and message.
#ifndef REMAT_TESTS_RUNTIME_SESSION_CHECKS_H_
#define REMAT_TESTS_RUNTIME_SESSION_CHECKS_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "remat/remat.h"
#include "tests/cmocka_cpp.h"

namespace remat_test {

namespace rc = remat::compiler;

constexpr char kMlp[] = "mlp:layers=2,width=8,in=4,classes=3";
constexpr char kTransformer[] =
    "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3";
constexpr int64_t kBatch = 2;
constexpr int32_t kClasses = 3;  // of both models
constexpr int32_t kVocab = 11;   // of the transformer

/// Whether sessions can be made on |backend| here, tried with plan |bytes|: false, printing the
/// library's message, when it answers REMAT_ERROR_UNAVAILABLE (a GPU backend without a device;
/// the caller's test then exits 77, skipped). Any other failure is left to the tests to report.
inline bool backend_available(const std::string& backend, const std::vector<uint8_t>& bytes) {
  remat_plan* plan = nullptr;
  char message[512] = "";
  if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK)
    return true;
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = backend.c_str();
  remat_session* session = nullptr;
  const remat_status status =
      remat_session_create(plan, &options, &session, message, sizeof(message));
  remat_session_destroy(session);
  remat_plan_close(plan);
  if (status != REMAT_ERROR_UNAVAILABLE) return true;
  printf("backend %s is not available here: %s\n", backend.c_str(), message);
  return false;
}

/// A compiled and opened plan; the bytes live as long as the plan.
struct OpenPlan {
  rc::CompileResult compiled;
  remat_plan* plan = nullptr;
  remat_plan_memory_info memory{};

  explicit OpenPlan(const char* model, const char* optimizer = "sgd:lr=0.1,momentum=0.9") {
    rc::CompileOptions o;
    o.model = model;
    o.batch = kBatch;
    o.optimizer = optimizer;
    compiled = rc::compile(o);
    assert_int_equal(remat_plan_open(compiled.plan.data(), compiled.plan.size(), &plan, nullptr, 0),
                     REMAT_OK);
    assert_int_equal(remat_plan_memory(plan, &memory), REMAT_OK);
  }
  ~OpenPlan() { remat_plan_close(plan); }
  OpenPlan(const OpenPlan&) = delete;
  OpenPlan& operator=(const OpenPlan&) = delete;
};

/// An aligned buffer of exactly |size| bytes (|size| rounded up to |alignment| for
/// aligned_alloc's sake only when it is not a multiple already), freed on scope exit.
struct Buffer {
  void* data;
  explicit Buffer(size_t size, size_t alignment = 4096) {
    data = aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    assert_non_null(data);
  }
  ~Buffer() { free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint8_t* bytes() const { return static_cast<uint8_t*>(data); }
};

/// Fails the test unless |message| contains every one of |needles|.
inline void expect_mentions(const char* message, std::initializer_list<std::string> needles) {
  for (const std::string& needle : needles) {
    if (strstr(message, needle.c_str()) == nullptr)
      fail_msg("message '%s' does not mention '%s'", message, needle.c_str());
  }
}

/// Creates a session and expects |want|; on failure checks the out contract and the message.
inline remat_session* create_expecting(const remat_plan* plan, const remat_session_options* options,
                                       remat_status want,
                                       std::initializer_list<std::string> needles = {}) {
  char message[512];
  memset(message, 'z', sizeof(message));
  static char sentinel;
  remat_session* session = reinterpret_cast<remat_session*>(&sentinel);
  const remat_status status =
      remat_session_create(plan, options, &session, message, sizeof(message));
  assert_non_null(memchr(message, '\0', sizeof(message)));
  if (status != want) {
    fail_msg("expected %s, got %s: '%s'", remat_status_string(want), remat_status_string(status),
             message);
  }
  if (status == REMAT_OK) {
    assert_non_null(session);
    assert_string_equal(remat_session_last_error(session), "");
  } else {
    assert_null(session);
    expect_mentions(message, needles);
  }
  return session;
}

/// Expects |status| from a call on |session| and a last error that mentions |needles|.
inline void expect_call(remat_session* session, remat_status status, remat_status want,
                        std::initializer_list<std::string> needles = {}) {
  const char* message = remat_session_last_error(session);
  if (status != want) {
    fail_msg("expected %s, got %s: '%s'", remat_status_string(want), remat_status_string(status),
             message);
  }
  expect_mentions(message, needles);
}

/// The bindings of |kind| of |plan|, in plan order.
inline std::vector<remat_tensor_info> bindings(const remat_plan* plan, remat_binding_kind kind) {
  uint32_t count = 0;
  assert_int_equal(remat_plan_binding_count(plan, kind, &count), REMAT_OK);
  std::vector<remat_tensor_info> out(count);
  for (uint32_t i = 0; i < count; ++i)
    assert_int_equal(remat_plan_binding(plan, kind, i, &out[i]), REMAT_OK);
  return out;
}

/// Sets every input and label: f32 inputs to a small ramp, i32 ids to i mod |id_range| and
/// labels to i mod kClasses.
inline void set_all_inputs(remat_session* session, const remat_plan* plan, int32_t id_range) {
  for (remat_binding_kind kind : {REMAT_BINDING_INPUT, REMAT_BINDING_LABEL}) {
    for (const remat_tensor_info& info : bindings(plan, kind)) {
      const size_t n = info.bytes / 4;
      std::vector<uint8_t> data(info.bytes);
      for (size_t i = 0; i < n; ++i) {
        if (info.dtype == REMAT_DTYPE_I32) {
          const int32_t range = kind == REMAT_BINDING_LABEL ? kClasses : id_range;
          const int32_t v = static_cast<int32_t>(i % static_cast<size_t>(range));
          memcpy(&data[i * 4], &v, 4);
        } else {
          const float v = 0.25f * static_cast<float>(i % 7) - 0.5f;
          memcpy(&data[i * 4], &v, 4);
        }
      }
      assert_int_equal(remat_session_set_input(session, info.name, data.data(), data.size()),
                       REMAT_OK);
    }
  }
}

/// Every parameter's bytes, in plan order.
inline std::vector<uint8_t> read_params(remat_session* session, const remat_plan* plan) {
  std::vector<uint8_t> all;
  for (const remat_tensor_info& info : bindings(plan, REMAT_BINDING_PARAM)) {
    std::vector<uint8_t> one(info.bytes);
    assert_int_equal(remat_session_read_param(session, info.name, one.data(), one.size()),
                     REMAT_OK);
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

}  // namespace remat_test

#endif  // REMAT_TESTS_RUNTIME_SESSION_CHECKS_H_
