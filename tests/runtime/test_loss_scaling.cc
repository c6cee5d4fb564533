// Dynamic loss scaling's plan contract (plan.fbs, LossScaling) and session API: every field the
// verifier checks refused with its message, the scale read back, a bad stored scale refused.
// (Its training behaviour, halving, growth and resume, is in tests/cli/test_cli_precision.cc.)
#include "tests/cmocka_cpp.h"

#include <string.h>

#include <string>
#include <vector>

#include "tests/runtime/plan_edits.h"

using namespace remat_test;  // the plan edits shared by the verification tests

namespace {

// The small transformer at fp16, which scales its loss by default.
rc::CompileResult compile_fp16(const char* loss_scale = "") {
  rc::CompileOptions o;
  o.model = kTransformer;
  o.batch = 2;
  o.precision = rc::Precision::kFp16;
  o.loss_scale = loss_scale;
  return rc::compile(o);
}

// A session of |bytes| on the CPU; the status of creating it, its message in |message|.
remat_status create(const std::vector<uint8_t>& bytes, remat_plan** plan, remat_session** session,
                    char (&message)[512]) {
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), plan, message, sizeof(message)),
                   REMAT_OK);
  return remat_session_create(*plan, nullptr, session, message, sizeof(message));
}

void a_plan_with_loss_scaling_opens_and_says_its_scale(void**) {
  const rc::CompileResult r = compile_fp16("dynamic:init=1024,interval=7");
  const fb::LossScaling* l = fb::GetPlan(r.plan.data())->loss_scaling();
  assert_non_null(l);
  assert_int_equal(l->growth_interval(), 7);
  assert_true(l->scale_ops()->size() >= 1);
  // One unscale op per parameter, each a scale op by 1 / S.
  assert_int_equal(l->unscale_ops()->size(), r.graph.params.size());
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  char message[512] = "";
  assert_int_equal(create(r.plan, &plan, &session, message), REMAT_OK);
  float scale = 0.0f;
  assert_int_equal(remat_session_loss_scale(session, &scale), REMAT_OK);
  assert_true(scale == 1024.0f);
  assert_int_equal(remat_session_loss_scale(session, nullptr), REMAT_ERROR_INVALID_ARGUMENT);
  assert_int_equal(remat_session_loss_scale(nullptr, &scale), REMAT_ERROR_INVALID_ARGUMENT);
  remat_session_destroy(session);
  remat_plan_close(plan);
  // A float32 plan has none.
  const rc::CompileResult f32 = compile_model(kTransformer);
  assert_null(fb::GetPlan(f32.plan.data())->loss_scaling());
  assert_int_equal(create(f32.plan, &plan, &session, message), REMAT_OK);
  assert_int_equal(remat_session_loss_scale(session, &scale), REMAT_ERROR_NOT_FOUND);
  remat_session_destroy(session);
  remat_plan_close(plan);
}

void every_field_of_the_loss_scaling_is_checked(void**) {
  const rc::CompileResult r = compile_fp16();
  const int param = find_tensor(r.graph, "classifier.weight");
  const int scale = r.graph.loss_scaling.scale;
  expect_status(rewritten(r,
                          [param](rc::Graph& g, rc::MemoryPlan&) {
                            g.loss_scaling.scale = param;  // a parameter, not state
                          }),
                REMAT_ERROR_PLAN_CORRUPT,
                {"loss_scaling.scale names tensor", "persistent f32 scalar of role State"});
  expect_status(rewritten(r,
                          [scale](rc::Graph& g, rc::MemoryPlan&) {
                            g.loss_scaling.clean_steps = scale;  // f32, not i64
                          }),
                REMAT_ERROR_PLAN_CORRUPT, {"loss_scaling.clean_steps names tensor", "i64"});
  expect_status(
      rewritten(r, [](rc::Graph& g, rc::MemoryPlan&) { g.loss_scaling.growth_interval = 0; }),
      REMAT_ERROR_PLAN_CORRUPT, {"growth_interval is 0"});
  expect_status(rewritten(r, [](rc::Graph& g, rc::MemoryPlan&) { g.loss_scaling.scaled.clear(); }),
                REMAT_ERROR_PLAN_CORRUPT, {"loss_scaling.scale_ops is empty"});
  // An unscale op that is a matmul.
  std::vector<uint8_t> bytes = r.plan;
  const int matmul = find_op(r.graph, remat::OpCode::kMatMul);
  mutable_plan(bytes)->mutable_loss_scaling()->mutable_unscale_ops()->Mutate(
      0, static_cast<uint32_t>(matmul));
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                {"loss_scaling.unscale_ops[0] is op", "not a scale op of the step"});
  // An index one past the step's last op, in a plan without an eval program: past every op.
  rc::CompileOptions o;
  o.model = kTransformer;
  o.batch = 2;
  o.precision = rc::Precision::kFp16;
  o.eval_program = false;
  bytes = rc::compile(o).plan;
  const uint32_t step_ops = fb::GetPlan(bytes.data())->ops()->size();
  mutable_plan(bytes)->mutable_loss_scaling()->mutable_unscale_ops()->Mutate(0, step_ops);
  expect_status(bytes, REMAT_ERROR_PLAN_CORRUPT,
                {"loss_scaling.unscale_ops[0] is op", "not a scale op of the step"});
  // No finite_check: nothing would find the overflows.
  expect_status(rewritten(r,
                          [](rc::Graph& g, rc::MemoryPlan&) {
                            std::vector<rc::Op> kept;
                            for (const rc::Op& op : g.ops)
                              if (op.code != remat::OpCode::kFiniteCheck) kept.push_back(op);
                            g.ops = kept;
                          }),
                REMAT_ERROR_PLAN_CORRUPT, {"no finite_check"});
}

void a_stored_scale_that_is_not_a_positive_finite_number_is_refused(void**) {
  const rc::CompileResult r = compile_fp16();
  for (float bad : {0.0f, -1.0f, 1e38f, 3.0f}) {
    const std::vector<uint8_t> bytes = rewritten(r, [bad](rc::Graph& g, rc::MemoryPlan&) {
      memcpy(g.tensors[static_cast<size_t>(g.loss_scaling.scale)].init_data.data(), &bad, 4);
    });
    remat_plan* plan = nullptr;
    remat_session* session = nullptr;
    char message[512] = "";
    assert_int_equal(create(bytes, &plan, &session, message), REMAT_ERROR_INVALID_ARGUMENT);
    assert_null(session);
    if (strstr(message, "loss scale tensor 'loss_scale' holds") == nullptr)
      fail_msg("scale %g: '%s'", static_cast<double>(bad), message);
    remat_plan_close(plan);
  }
}

// A session created without initial values (init_params 0: the caller writes the parameters)
// finds zeros where the scale belongs, which no caller can write: the first step starts the
// scale at the plan's value instead of refusing it.
void a_session_without_initial_values_starts_at_the_plans_scale(void**) {
  const rc::CompileResult r = compile_fp16("dynamic:init=512,interval=1000");
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, message, sizeof(message)),
                   REMAT_OK);
  remat_session_options options;
  remat_session_options_init(&options);
  options.init_params = 0;
  remat_session* session = nullptr;
  assert_int_equal(remat_session_create(plan, &options, &session, message, sizeof(message)),
                   REMAT_OK);
  assert_int_equal(set_inputs_to_zeros(session, plan), REMAT_OK);
  float loss = 0.0f, scale = 0.0f;
  if (remat_session_step(session, &loss) != REMAT_OK)
    fail_msg("step: %s", remat_session_last_error(session));
  assert_int_equal(remat_session_loss_scale(session, &scale), REMAT_OK);
  assert_true(scale == 512.0f);
  remat_session_destroy(session);
  remat_plan_close(plan);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_plan_with_loss_scaling_opens_and_says_its_scale),
      cmocka_unit_test(every_field_of_the_loss_scaling_is_checked),
      cmocka_unit_test(a_stored_scale_that_is_not_a_positive_finite_number_is_refused),
      cmocka_unit_test(a_session_without_initial_values_starts_at_the_plans_scale),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
