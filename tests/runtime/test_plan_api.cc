// The plan C ABI's argument checks and what its queries say of a plan (plan_api.cc), and the
// status strings (error.cc): every wrong call gets its status, every status its own text.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "plan/checksum.h"
#include "plan/plan_generated.h"
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
  const remat_binding_kind beyond =
      static_cast<remat_binding_kind>(5);  // past REMAT_BINDING_BUFFER
  assert_int_equal(remat_plan_binding_count(nullptr, REMAT_BINDING_INPUT, &count),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_binding_count(plan, REMAT_BINDING_INPUT, nullptr),
                   REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_binding_count(plan, beyond, &count), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(count, 77);
  const uint32_t expected[] = {
      static_cast<uint32_t>(r.graph.inputs.size()), static_cast<uint32_t>(r.graph.labels.size()),
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

void plan_description_queries_reject_null_arguments_and_write_nothing(void**) {
  const rc::CompileResult r = compile_model(kMlp);
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, nullptr, 0), REMAT_OK);
  uint32_t version = 77, batch = 77;
  int has = 77;
  uint64_t seed = 77;
  const char* const untouched = "untouched";
  const char* text = untouched;
  assert_int_equal(remat_plan_format_version(nullptr, &version), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_format_version(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_has_eval_program(nullptr, &has), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_has_eval_program(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_has_finite_checks(nullptr, &has), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_has_finite_checks(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_seed(nullptr, &seed), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_seed(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_model(nullptr, &text), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_model(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_strategy(nullptr, &text), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_strategy(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_batch(nullptr, &batch), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_plan_batch(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(version, 77);
  assert_int_equal(has, 77);
  assert_int_equal(seed, 77);
  assert_ptr_equal(text, untouched);
  assert_int_equal(batch, 77);
  remat_plan_close(plan);
}

// What remat_plan_format_version ... remat_plan_batch write for |bytes|.
struct Described {
  uint32_t version = 0;
  int eval_program = -1;
  int finite_checks = -1;
  uint64_t seed = 0;
  remat_status model_status = REMAT_OK, strategy_status = REMAT_OK, batch_status = REMAT_OK;
  std::string model, strategy;  // "(null)" when the query wrote NULL
  uint32_t batch = 77;
};

Described describe(const std::vector<uint8_t>& edited) {
  const std::vector<uint8_t> bytes = remat_test::sealed(edited);  // the edits, not the checksum
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  Described d;
  assert_int_equal(remat_plan_format_version(plan, &d.version), REMAT_OK);
  assert_int_equal(remat_plan_has_eval_program(plan, &d.eval_program), REMAT_OK);
  assert_int_equal(remat_plan_has_finite_checks(plan, &d.finite_checks), REMAT_OK);
  assert_int_equal(remat_plan_seed(plan, &d.seed), REMAT_OK);
  const char* model = "unwritten";
  const char* strategy = "unwritten";
  d.model_status = remat_plan_model(plan, &model);
  d.strategy_status = remat_plan_strategy(plan, &strategy);
  d.batch_status = remat_plan_batch(plan, &d.batch);
  d.model = model ? model : "(null)";
  d.strategy = strategy ? strategy : "(null)";
  remat_plan_close(plan);
  return d;
}

void plan_description_queries_say_what_the_compiler_wrote(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = 3;
  o.seed = 0x123456789abcull;
  o.strategy = "sqrt";
  const Described d = describe(rc::compile(o).plan);
  assert_int_equal(d.version, REMAT_PLAN_FORMAT_VERSION);
  assert_int_equal(d.eval_program, 1);
  assert_int_equal(d.finite_checks, 1);
  assert_int_equal(d.seed, 0x123456789abcull);
  assert_int_equal(d.model_status, REMAT_OK);
  assert_string_equal(d.model.c_str(), kMlp);
  assert_int_equal(d.strategy_status, REMAT_OK);
  assert_string_equal(d.strategy.c_str(), "sqrt");
  assert_int_equal(d.batch_status, REMAT_OK);
  assert_int_equal(d.batch, 3);

  // Atomic checks are finite checks too.
  o.finite_checks = rc::FiniteChecks::kAtomic;
  assert_int_equal(describe(rc::compile(o).plan).finite_checks, 1);
}

void plans_without_an_eval_program_or_finite_checks_say_so(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = 2;
  o.eval_program = false;
  const std::vector<uint8_t> bare = rc::compile(o).plan;
  Described d = describe(bare);
  assert_int_equal(d.eval_program, 0);
  assert_int_equal(d.finite_checks, 1);

  o.eval_program = true;
  o.finite_checks = rc::FiniteChecks::kOff;
  d = describe(rc::compile(o).plan);
  assert_int_equal(d.eval_program, 1);
  assert_int_equal(d.finite_checks, 0);  // the eval program has none either

  // Format version 1 had no eval program (test_plan_eval.cc opens such plans).
  std::vector<uint8_t> old = bare;
  assert_true(remat::fb::GetMutablePlan(old.data())->mutate_format_version(1));
  remat::seal_plan(old.data(), old.size());
  d = describe(old);
  assert_int_equal(d.version, 1);
  assert_int_equal(d.eval_program, 0);
}

// --matmul-precision round trip: the compiler writes it, remat_plan_matmul_precision reads it
// back; fp32 (the default) leaves the field out, so those plans keep their bytes.
void plans_say_the_matmul_precision_they_were_compiled_with(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = 2;
  const std::vector<uint8_t> fp32 = rc::compile(o).plan;
  o.matmul_precision = rc::MatmulPrecision::kTf32;
  const std::vector<uint8_t> tf32 = rc::compile(o).plan;
  assert_true(fp32 != tf32);
  assert_true(remat::fb::GetPlan(fp32.data())->matmul_precision() ==
              remat::fb::MatmulPrecision::FP32);
  assert_true(remat::fb::GetPlan(tf32.data())->matmul_precision() ==
              remat::fb::MatmulPrecision::TF32);
  const struct {
    const std::vector<uint8_t>* bytes;
    remat_matmul_precision want;
  } cases[] = {{&fp32, REMAT_MATMUL_PRECISION_FP32}, {&tf32, REMAT_MATMUL_PRECISION_TF32}};
  for (const auto& c : cases) {
    remat_plan* plan = nullptr;
    assert_int_equal(remat_plan_open(c.bytes->data(), c.bytes->size(), &plan, nullptr, 0),
                     REMAT_OK);
    remat_matmul_precision precision = static_cast<remat_matmul_precision>(7);
    assert_int_equal(remat_plan_matmul_precision(plan, &precision), REMAT_OK);
    assert_int_equal(precision, c.want);
    assert_int_equal(remat_plan_matmul_precision(plan, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
    assert_int_equal(remat_plan_matmul_precision(nullptr, &precision),
                     REMAT_ERROR_INVALID_ARGUMENT);
    remat_plan_close(plan);
  }
}

// Marks field |field| (a VT_ offset) of the FlatBuffers table at |table| absent, as a writer
// that left it out would have: the compiler always writes the provenance, a hand-made plan
// need not.
void leave_out(const void* table, flatbuffers::voffset_t field) {
  uint8_t* at = static_cast<uint8_t*>(const_cast<void*>(table));
  uint8_t* vtable = at - flatbuffers::ReadScalar<flatbuffers::soffset_t>(at);
  assert_true(field < flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable));
  flatbuffers::WriteScalar<flatbuffers::voffset_t>(vtable + field, 0);
}

void a_plan_that_does_not_say_how_it_was_compiled_names_no_model_strategy_or_batch(void**) {
  const std::vector<uint8_t> compiled = compile_model(kMlp).plan;
  std::vector<uint8_t> bytes = compiled;
  leave_out(remat::fb::GetPlan(bytes.data())->provenance(), remat::fb::Provenance::VT_MODEL);
  Described d = describe(bytes);
  assert_int_equal(d.model_status, REMAT_ERROR_NOT_FOUND);
  assert_string_equal(d.model.c_str(), "(null)");
  assert_int_equal(d.strategy_status, REMAT_OK);
  assert_string_equal(d.strategy.c_str(), "none");
  assert_int_equal(d.batch_status, REMAT_OK);
  assert_int_equal(d.batch, 2);

  leave_out(remat::fb::GetPlan(bytes.data())->provenance(), remat::fb::Provenance::VT_STRATEGY);
  d = describe(bytes);
  assert_int_equal(d.strategy_status, REMAT_ERROR_NOT_FOUND);
  assert_string_equal(d.strategy.c_str(), "(null)");
  assert_int_equal(d.batch_status, REMAT_OK);

  bytes = compiled;
  leave_out(remat::fb::GetPlan(bytes.data()), remat::fb::Plan::VT_PROVENANCE);
  assert_null(remat::fb::GetPlan(bytes.data())->provenance());
  d = describe(bytes);
  assert_int_equal(d.model_status, REMAT_ERROR_NOT_FOUND);
  assert_string_equal(d.model.c_str(), "(null)");
  assert_int_equal(d.strategy_status, REMAT_ERROR_NOT_FOUND);
  assert_string_equal(d.strategy.c_str(), "(null)");
  assert_int_equal(d.batch_status, REMAT_ERROR_NOT_FOUND);
  assert_int_equal(d.batch, 0);
  // The rest of the plan is still there.
  assert_int_equal(d.version, REMAT_PLAN_FORMAT_VERSION);
  assert_int_equal(d.eval_program, 1);
  assert_int_equal(d.finite_checks, 1);
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
      cmocka_unit_test(plan_description_queries_reject_null_arguments_and_write_nothing),
      cmocka_unit_test(plan_description_queries_say_what_the_compiler_wrote),
      cmocka_unit_test(plans_without_an_eval_program_or_finite_checks_say_so),
      cmocka_unit_test(plans_say_the_matmul_precision_they_were_compiled_with),
      cmocka_unit_test(
          a_plan_that_does_not_say_how_it_was_compiled_names_no_model_strategy_or_batch),
      cmocka_unit_test(status_strings_are_distinct_and_unknown_values_say_so),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
