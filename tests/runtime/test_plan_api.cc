// The plan C ABI's argument checks (plan_api.cc) and the status strings (error.cc): every wrong
// call gets its status, every status its own text.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/runtime/compiled_plan.h"

namespace {

namespace rc = remat::compiler;
using remat_test::compile_model;

const char kMlp[] = "mlp:layers=2,width=8,in=4,classes=3";

void plan_queries_reject_null_arguments_and_bad_kinds(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, nullptr, 0), REMAT_OK);
  remat_plan_memory_info memory;
  assert_int_equal(remat_plan_memory(nullptr, &memory), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_memory(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_memory(plan, &memory), REMAT_OK);
  assert_int_equal(memory.arena_bytes, r.memory.arena_size);
  assert_int_equal(memory.persistent_bytes, r.memory.persistent_size);
  assert_int_equal(memory.host_bytes, r.memory.host_size);
  assert_int_equal(memory.alignment, r.memory.alignment);

  uint32_t count = 77;
  const remat_binding_kind beyond = static_cast<remat_binding_kind>(5);  // past REMAT_BINDING_BUFFER
  assert_int_equal(remat_plan_binding_count(nullptr, REMAT_BINDING_INPUT, &count), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_binding_count(plan, REMAT_BINDING_INPUT, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_binding_count(plan, beyond, &count), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(count, 77);
  const uint32_t expected[] = {static_cast<uint32_t>(r.graph.inputs.size()), static_cast<uint32_t>(r.graph.labels.size()),
                               static_cast<uint32_t>(r.graph.params.size()), static_cast<uint32_t>(r.graph.outputs.size())};
  assert_int_equal(expected[REMAT_BINDING_OUTPUT], 1);  // the logits
  for (uint32_t kind = REMAT_BINDING_INPUT; kind <= REMAT_BINDING_OUTPUT; ++kind) {
    const remat_binding_kind k = static_cast<remat_binding_kind>(kind);
    assert_int_equal(remat_plan_binding_count(plan, k, &count), REMAT_OK);
    assert_int_equal(count, expected[kind]);
    remat_tensor_info info;
    assert_int_equal(remat_plan_binding(plan, k, count, &info), REMAT_ERROR_NOT_FOUND);
    assert_int_equal(remat_plan_binding(plan, k, 0xFFFFFFFFu, &info), REMAT_ERROR_NOT_FOUND);
    assert_int_equal(remat_plan_binding(plan, k, 0, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(remat_plan_binding(nullptr, k, 0, &info), REMAT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(remat_plan_binding(plan, k, 0, &info), REMAT_OK);
  }
  remat_tensor_info info;
  assert_int_equal(remat_plan_binding(plan, beyond, 0, &info), REMAT_ERROR_INVALID_ARGUMENT);
  // A good query describes the binding as the graph does.
  assert_int_equal(remat_plan_binding(plan, REMAT_BINDING_PARAM, 0, &info), REMAT_OK);
  const rc::Tensor& p0 = r.graph.tensors[static_cast<size_t>(r.graph.params[0])];
  assert_string_equal(info.name, p0.name.c_str());
  assert_int_equal(info.rank, p0.shape.size());
  assert_int_equal(info.bytes, p0.bytes());
  for (uint32_t d = 0; d < info.rank; ++d) assert_int_equal(info.dims[d], p0.shape[d]);
  for (uint32_t d = info.rank; d < REMAT_MAX_RANK; ++d) assert_int_equal(info.dims[d], 0);
  remat_plan_close(plan);
  remat_plan_close(nullptr);
}

void status_strings_are_distinct_and_unknown_values_say_so(void**) {
  std::vector<std::string> seen;
  for (int s = REMAT_OK; s <= REMAT_ERROR_NONFINITE; ++s) {
    const char* text = remat_status_string(static_cast<remat_status>(s));
    assert_non_null(text);
    assert_true(text[0] != '\0');
    assert_string_not_equal(text, "unknown status");
    for (const std::string& other : seen) assert_string_not_equal(text, other.c_str());
    seen.push_back(text);
  }
  // Values within the enum's range that name no status (the enum is append-only).
  assert_int_equal(REMAT_ERROR_NONFINITE, 22);  // the last appended; values are ABI
  for (int s : {REMAT_ERROR_NONFINITE + 1, 31}) {
    assert_string_equal(remat_status_string(static_cast<remat_status>(s)), "unknown status");
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(plan_queries_reject_null_arguments_and_bad_kinds),
      cmocka_unit_test(status_strings_are_distinct_and_unknown_values_say_so),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
