// Verification of a plan's eval program (docs/plan-format.md): its fields, what its ops may read
// and write, its outputs living to the end, and plans of format version 1, which have none. Each
// bad plan is a compiled one with its graph edited, placed again and written, so that only the
// rule under test is broken.
#include "tests/cmocka_cpp.h"

#include <cstring>
#include <string>

#include "compiler/compiler.h"
#include "plan/ops.h"
#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "remat/remat.h"
#include "tests/runtime/plan_edits.h"

namespace rc = remat::compiler;
using remat_test::expect_open;
using remat_test::find_tensor;
using remat_test::kMlp;

namespace {

std::vector<uint8_t> written(const rc::Graph& graph, const rc::CompileReport& report) {
  return rc::write_plan(graph, rc::plan_memory(graph, 64), report, 0);
}

void the_compiled_eval_program_opens(void**) {
  const auto r = rc::compile([] {
    rc::CompileOptions o;
    o.model = kMlp;
    o.batch = 2;
    return o;
  }());
  assert_true(r.graph.eval_ops > 0);
  expect_open(written(r.graph, r.report), REMAT_OK, "");
}

void eval_ops_past_the_op_list_are_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  const std::vector<uint8_t> good = r.plan;
  std::vector<uint8_t> bytes = good;
  const uint32_t ops = remat::fb::GetPlan(bytes.data())->ops()->size();
  assert_true(remat::fb::GetMutablePlan(bytes.data())->mutate_eval_ops(ops + 1));
  expect_open(bytes, REMAT_ERROR_PLAN_CORRUPT, ("eval_ops is " + std::to_string(ops + 1)).c_str());
}

void an_eval_loss_that_is_the_step_loss_or_no_scalar_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(remat::fb::GetMutablePlan(bytes.data())
                  ->mutate_eval_loss(static_cast<uint32_t>(r.graph.loss)));
  expect_open(bytes, REMAT_ERROR_OUT_OF_REGION, "eval_loss names tensor");
  r.graph.eval_loss = find_tensor(r.graph, "logits");  // [2, 3]
  expect_open(written(r.graph, r.report), REMAT_ERROR_OUT_OF_REGION, "not an f32 scalar");
  // Optimizer state (persistent): the eval program would change what the next step reads.
  r = remat_test::compile_model(kMlp);
  r.graph.tensors[r.graph.eval_loss].role = rc::Role::kState;
  expect_open(written(r.graph, r.report), REMAT_ERROR_OUT_OF_REGION, "of its own in the arena");
}

void outputs_without_an_eval_program_or_named_twice_are_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  std::vector<uint8_t> bytes = r.plan;
  assert_true(remat::fb::GetMutablePlan(bytes.data())->mutate_eval_ops(0));
  expect_open(bytes, REMAT_ERROR_PLAN_CORRUPT, "1 outputs but no eval program");
  r.graph.outputs.push_back(r.graph.outputs[0]);
  expect_open(written(r.graph, r.report), REMAT_ERROR_PLAN_CORRUPT,
              "output bindings 0 and 1 are both 'logits'");
}

// The last update joins the eval program: it would change a parameter outside a step.
void an_eval_op_that_writes_a_parameter_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  r.graph.eval_ops += 1;
  expect_open(written(r.graph, r.report), REMAT_ERROR_PLAN_CORRUPT,
              "of the eval program writes Param tensor");
}

// The eval program may run before any step: a step's activation holds nothing for it.
void an_eval_op_that_reads_a_step_tensor_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  rc::Graph& g = r.graph;
  const int step_tensor = find_tensor(g, "fc0.out"), eval_tensor = find_tensor(g, "fc0.out@eval");
  bool edited = false;
  for (size_t i = g.ops.size() - g.eval_ops; i < g.ops.size(); ++i) {
    for (int& t : g.ops[i].inputs) {
      if (t == eval_tensor) {
        t = step_tensor;
        edited = true;
      }
    }
  }
  assert_true(edited);
  expect_open(written(g, r.report), REMAT_ERROR_PLAN_CORRUPT,
              "reads tensor 'fc0.out' before any op writes it");
}

void a_step_op_that_writes_the_eval_loss_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  rc::Graph& g = r.graph;
  for (rc::Op& op : g.ops) {
    if (op.phase == rc::Phase::kForward && op.outputs[0] == g.loss) op.outputs[0] = g.eval_loss;
  }
  expect_open(written(g, r.report), REMAT_ERROR_PLAN_CORRUPT,
              "of the step writes the eval loss 'loss@eval'");
}

void an_output_no_eval_op_writes_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  r.graph.outputs = {find_tensor(r.graph, "fc0.out")};
  expect_open(written(r.graph, r.report), REMAT_ERROR_PLAN_CORRUPT,
              "no op of the eval program writes output 'fc0.out'");
}

// The caller reads the outputs after the eval program's last op: a later op may not reuse their
// bytes, though no op reads them after their last reader.
void an_output_overwritten_after_its_last_reader_is_rejected(void**) {
  auto r = remat_test::compile_model(kMlp);
  rc::Graph& g = r.graph;
  const int probs = find_tensor(g, "probs@eval"), logits = find_tensor(g, "logits");
  const int late =
      g.add_tensor("late@eval", REMAT_DTYPE_F32, g.tensors[logits].shape, rc::Role::kActivation);
  g.add_op(remat::OpCode::kRelu, {probs}, {late}, {}, {}, rc::Phase::kEval);
  g.eval_ops += 1;
  rc::MemoryPlan memory = rc::plan_memory(g, 64);
  expect_open(rc::write_plan(g, memory, r.report, 0), REMAT_OK, "");
  memory.offset[late] = memory.offset[logits];
  expect_open(rc::write_plan(g, memory, r.report, 0), REMAT_ERROR_OVERLAP, "'logits'");
}

// Format version 1 had no eval program: such plans still open and train; one that claims an
// eval program is corrupt.
void version_1_plans_open_without_an_eval_program_only(void**) {
  rc::CompileOptions o;
  o.model = kMlp;
  o.batch = 2;
  o.eval_program = false;
  std::vector<uint8_t> bytes = rc::compile(o).plan;
  assert_true(remat::fb::GetMutablePlan(bytes.data())->mutate_format_version(1));
  remat::seal_plan(bytes.data(), bytes.size());
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, nullptr, 0), REMAT_OK);
  remat_session* session = nullptr;
  assert_int_equal(remat_session_create(plan, nullptr, &session, nullptr, 0), REMAT_OK);
  assert_int_equal(remat_test::set_inputs_to_zeros(session, plan), REMAT_OK);
  assert_int_equal(remat_session_step(session, nullptr), REMAT_OK);
  float loss = 0;
  assert_int_equal(remat_session_eval(session, &loss), REMAT_ERROR_NOT_FOUND);
  assert_non_null(std::strstr(remat_session_last_error(session), "format version 1"));
  remat_session_destroy(session);
  remat_plan_close(plan);

  std::vector<uint8_t> with_eval = remat_test::compile_model(kMlp).plan;
  assert_true(remat::fb::GetMutablePlan(with_eval.data())->mutate_format_version(1));
  expect_open(with_eval, REMAT_ERROR_PLAN_CORRUPT, "plan format version 1 has no eval program");
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_compiled_eval_program_opens),
      cmocka_unit_test(eval_ops_past_the_op_list_are_rejected),
      cmocka_unit_test(an_eval_loss_that_is_the_step_loss_or_no_scalar_is_rejected),
      cmocka_unit_test(outputs_without_an_eval_program_or_named_twice_are_rejected),
      cmocka_unit_test(an_eval_op_that_writes_a_parameter_is_rejected),
      cmocka_unit_test(an_eval_op_that_reads_a_step_tensor_is_rejected),
      cmocka_unit_test(a_step_op_that_writes_the_eval_loss_is_rejected),
      cmocka_unit_test(an_output_no_eval_op_writes_is_rejected),
      cmocka_unit_test(an_output_overwritten_after_its_last_reader_is_rejected),
      cmocka_unit_test(version_1_plans_open_without_an_eval_program_only),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
