// Shared by the plan tests: a template compiled at batch 2, the plans they corrupt or query,
// and inputs of zeros for a session of one.
#ifndef REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_
#define REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_

#include <cstring>
#include <vector>

#include "compiler/compiler.h"
#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "tests/cmocka_cpp.h"

namespace remat_test {

/// |model| compiled at batch 2 with |optimizer| and the other options' defaults.
inline remat::compiler::CompileResult compile_model(
    const char* model, const char* optimizer = "sgd:lr=0.1,momentum=0.9") {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 2;
  o.optimizer = optimizer;
  return remat::compiler::compile(o);
}

/// Sets every input and label binding of |plan| in |session| to zeros (id 0 and label 0 are
/// valid in every template); returns the first status set_input refused, or REMAT_OK. The
/// binding queries themselves must succeed on an opened plan (test assertions).
inline remat_status set_inputs_to_zeros(remat_session* session, const remat_plan* plan) {
  for (uint32_t kind = REMAT_BINDING_INPUT; kind <= REMAT_BINDING_LABEL; ++kind) {
    uint32_t count = 0;
    assert_int_equal(remat_plan_binding_count(plan, static_cast<remat_binding_kind>(kind), &count),
                     REMAT_OK);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info t;
      assert_int_equal(remat_plan_binding(plan, static_cast<remat_binding_kind>(kind), i, &t),
                       REMAT_OK);
      const std::vector<uint8_t> zeros(t.bytes, 0);
      const remat_status status =
          remat_session_set_input(session, t.name, zeros.data(), zeros.size());
      if (status != REMAT_OK) return status;
    }
  }
  return REMAT_OK;
}

/// |bytes| with their checksum recomputed (plan/checksum.h), as the compiler would have written
/// them had it made the edit a test made: the edit then meets the verifier's checks rather than
/// the checksum's. Bytes the FlatBuffers verifier refuses come back as they are (their checksum
/// field cannot be located safely), and so do plans without the field.
inline std::vector<uint8_t> sealed(std::vector<uint8_t> bytes) {
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), 16, 10000000);
  if (bytes.size() >= 8 && remat::fb::PlanBufferHasIdentifier(bytes.data()) &&
      remat::fb::VerifyPlanBuffer(verifier)) {
    remat::seal_plan(bytes.data(), bytes.size());
  }
  return bytes;
}

/// Opens |bytes| as a plan, sealed() (and closes it again); fails the test unless the status is
/// |status| and the message contains |needle|.
inline void expect_open(const std::vector<uint8_t>& given, remat_status status,
                        const char* needle) {
  const std::vector<uint8_t> bytes = sealed(given);
  remat_plan* plan = nullptr;
  char message[512] = "";
  const remat_status got =
      remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message));
  remat_plan_close(plan);
  if (got != status || std::strstr(message, needle) == nullptr) {
    fail_msg("expected %s with '%s', got %s: '%s'", remat_status_string(status), needle,
             remat_status_string(got), message);
  }
}

}  // namespace remat_test

#endif  // REMAT_TESTS_RUNTIME_COMPILED_PLAN_H_
