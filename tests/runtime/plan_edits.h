// Shared by the plan verification tests: compiled plans edited in their graph or in their bytes,
// and opened to see what the verifier says.
#ifndef REMAT_TESTS_RUNTIME_PLAN_EDITS_H_
#define REMAT_TESTS_RUNTIME_PLAN_EDITS_H_

#include <stdio.h>
#include <string.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "plan/ops.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"

namespace remat_test {

namespace rc = remat::compiler;
namespace fb = remat::fb;

/// Models the verification tests compile (at batch 2, compiled_plan.h).
constexpr char kMlp[] = "mlp:layers=2,width=8,in=4,classes=3";
constexpr char kMlpDropout[] = "mlp:layers=2,width=8,in=4,classes=3,dropout=0.1";
constexpr char kTransformer[] =
    "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3,dropout=0.1";

/// The same plan written again from the compiler's graph and memory plan after |edit| changed
/// them: the way to set a field to a value FlatBuffers would otherwise leave out (a default).
template <typename Edit>
inline std::vector<uint8_t> rewritten(const rc::CompileResult& r, Edit edit) {
  rc::Graph graph = r.graph;
  rc::MemoryPlan memory = r.memory;
  edit(graph, memory);
  return rc::write_plan(graph, memory, r.report, fb::GetPlan(r.plan.data())->seed());
}

/// The plan |bytes|, to change in place.
inline fb::Plan* mutable_plan(std::vector<uint8_t>& bytes) {
  return fb::GetMutablePlan(bytes.data());
}

/// Tensor |index| of the plan |bytes|, to change in place.
inline fb::Tensor* mutable_tensor(std::vector<uint8_t>& bytes, int index) {
  return mutable_plan(bytes)->mutable_tensors()->GetMutableObject(static_cast<uint32_t>(index));
}

/// Op |index| of the plan |bytes|, to change in place.
inline fb::Op* mutable_op(std::vector<uint8_t>& bytes, int index) {
  return mutable_plan(bytes)->mutable_ops()->GetMutableObject(static_cast<uint32_t>(index));
}

/// Index of the |nth| op with |code| in |graph|, failing the test when there is none.
inline int find_op(const rc::Graph& graph, remat::OpCode code, int nth = 0) {
  for (size_t i = 0; i < graph.ops.size(); ++i) {
    if (graph.ops[i].code == code && nth-- == 0) return static_cast<int>(i);
  }
  fail_msg("the graph has no op %s", remat::op_name(static_cast<uint16_t>(code)));
  return -1;
}

/// Index of the tensor |name| of |graph|, failing the test when there is none.
inline int find_tensor(const rc::Graph& graph, const char* name) {
  const int t = graph.find(name);
  if (t < 0) fail_msg("the graph has no tensor '%s'", name);
  return t;
}

/// What opening bytes as a plan gave.
struct Opened {
  remat_status status;
  std::string message;
};

/// Opens |size| bytes at |data| and closes the plan again; checks the out_plan contract.
inline Opened open_bytes(const void* data, size_t size) {
  char message[512];
  memset(message, 'z', sizeof(message));
  static char sentinel;
  remat_plan* plan = reinterpret_cast<remat_plan*>(&sentinel);  // must be overwritten
  const remat_status status = remat_plan_open(data, size, &plan, message, sizeof(message));
  assert_non_null(memchr(message, '\0', sizeof(message)));
  if (status == REMAT_OK) {
    assert_non_null(plan);
    assert_string_equal(message, "");
  } else {
    assert_null(plan);
  }
  remat_plan_close(plan);
  return Opened{status, message};
}

/// Expects |bytes|, sealed(), to be rejected with |want| and a message containing every one of
/// |needles|.
inline void expect_status(const std::vector<uint8_t>& given, remat_status want,
                          std::initializer_list<const char*> needles = {}) {
  const std::vector<uint8_t> bytes = sealed(given);
  const Opened o = open_bytes(bytes.data(), bytes.size());
  if (o.status != want) {
    fail_msg("expected %s, got %s: '%s'", remat_status_string(want), remat_status_string(o.status),
             o.message.c_str());
  }
  for (const char* needle : needles) {
    if (strstr(o.message.c_str(), needle) == nullptr) {
      fail_msg("%s message '%s' does not mention '%s'", remat_status_string(want),
               o.message.c_str(), needle);
    }
  }
}

/// Runs two steps of an opened plan with zeros for every input; returns the first failure.
inline remat_status run_two_steps(const remat_plan* plan) {
  remat_session* session = nullptr;
  remat_status status = remat_session_create(plan, nullptr, &session, nullptr, 0);
  if (status == REMAT_OK) status = set_inputs_to_zeros(session, plan);
  for (int step = 0; step < 2 && status == REMAT_OK; ++step)
    status = remat_session_step(session, nullptr);
  remat_session_destroy(session);
  return status;
}

}  // namespace remat_test

#endif  // REMAT_TESTS_RUNTIME_PLAN_EDITS_H_
