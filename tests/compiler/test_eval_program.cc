// The eval program the compiler appends (compiler/eval_program.h): the forward ops again on
// tensors of their own, no dropout, the logits as output, and placed so that the step's plan is
// the same with or without it.
#include "tests/cmocka_cpp.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "compiler/compiler.h"
#include "compiler/eval_program.h"
#include "plan/ops.h"

namespace rc = remat::compiler;

namespace {

rc::CompileResult compile(const std::string& model, const std::string& strategy,
                          bool eval_program) {
  rc::CompileOptions o;
  o.model = model;
  o.batch = 8;
  o.strategy = strategy;
  o.eval_program = eval_program;
  return rc::compile(o);
}

void the_eval_program_is_the_forward_pass_without_dropout(void**) {
  const rc::CompileResult r =
      compile("mlp:layers=3,width=16,in=8,classes=5,dropout=0.5", "sqrt", true);
  const rc::Graph& g = r.graph;
  size_t forward = 0, dropouts = 0;
  for (const rc::Op& op : g.ops) {
    if (op.phase != rc::Phase::kForward) continue;
    ++forward;
    dropouts += op.code == remat::OpCode::kDropout;
  }
  assert_int_equal(dropouts, 3);
  assert_int_equal(g.eval_ops, forward - dropouts);
  assert_int_equal(r.report.eval_ops, g.eval_ops);
  for (size_t i = g.ops.size() - g.eval_ops; i < g.ops.size(); ++i) {
    const rc::Op& op = g.ops[i];
    assert_int_equal(static_cast<int>(op.phase), static_cast<int>(rc::Phase::kEval));
    assert_int_not_equal(static_cast<int>(op.code), static_cast<int>(remat::OpCode::kDropout));
    // Its own tensors, and the step's inputs, labels and parameters; nothing else of the step's.
    for (int t : op.inputs) {
      const rc::Role role = g.tensors[t].role;
      const bool shared =
          role == rc::Role::kInput || role == rc::Role::kLabel || role == rc::Role::kParam;
      if (!shared && g.tensors[t].name.find("@eval") == std::string::npos &&
          g.tensors[t].name != "logits") {
        fail_msg("eval op %zu reads the step's tensor '%s'", i, g.tensors[t].name.c_str());
      }
    }
  }
  assert_int_equal(g.outputs.size(), 1);
  const rc::Tensor& logits = g.tensors[g.outputs[0]];
  assert_string_equal(logits.name.c_str(), "logits");
  assert_int_equal(logits.shape.size(), 2);
  assert_int_equal(logits.shape[0], 8);
  assert_int_equal(logits.shape[1], 5);
  assert_string_equal(g.tensors[g.eval_loss].name.c_str(), "loss@eval");
  // Not a step's figure: the step's flops leave the eval program out.
  double step_flops = 0;
  for (size_t i = 0; i + g.eval_ops < g.ops.size(); ++i) step_flops += g.ops[i].flops;
  assert_true(r.report.step_flops == step_flops);
}

// The step's tensors sit where they sit without an eval program; the arena is the larger of the
// two programs'. Prints what each template and strategy needs.
void the_eval_program_leaves_the_steps_placement_as_it_is(void**) {
  const char* const models[] = {
      "mlp:layers=8,width=64,in=32,classes=10,dropout=0.1",
      "resmlp:layers=6,width=64,in=32,classes=10",
      "transformer:layers=4,hidden=64,heads=4,ffn=256,seq=32,vocab=100,classes=4,dropout=0.1"};
  for (const char* model : models) {
    for (const char* strategy : {"none", "sqrt", "selective"}) {
      const rc::CompileResult without = compile(model, strategy, false),
                              with = compile(model, strategy, true);
      assert_int_equal(without.graph.eval_ops, 0);
      assert_int_equal(without.memory.eval_arena_size, 0);
      const size_t n = without.graph.tensors.size();
      for (size_t t = 0; t < n; ++t) {
        if (with.memory.offset[t] != without.memory.offset[t] ||
            with.memory.region[t] != without.memory.region[t]) {
          fail_msg("%s (%s): tensor '%s' moved", model, strategy,
                   without.graph.tensors[t].name.c_str());
        }
      }
      assert_int_equal(with.memory.step_arena_size, without.memory.arena_size);
      assert_int_equal(with.memory.arena_size,
                       std::max(with.memory.step_arena_size, with.memory.eval_arena_size));
      // What docs/eval.md reports for these models: the eval program adds no arena byte.
      assert_true(with.memory.eval_arena_size <= with.memory.step_arena_size);
      // Persistent bytes are the step's: the eval loss lives in the arena.
      assert_int_equal(with.memory.persistent_size, without.memory.persistent_size);
      std::printf("%-28.28s %-9s step arena %9llu B, eval program within %9llu B\n", model,
                  strategy, static_cast<unsigned long long>(with.memory.step_arena_size),
                  static_cast<unsigned long long>(with.memory.eval_arena_size));
    }
  }
}

void the_prediction_of_an_mse_loss_is_called_predictions(void**) {
  rc::Graph g;
  const int x = g.add_tensor("x", REMAT_DTYPE_F32, {4, 3}, rc::Role::kInput);
  const int y = g.add_tensor("y", REMAT_DTYPE_F32, {4, 3}, rc::Role::kLabel);
  const int w = g.add_tensor("w", REMAT_DTYPE_F32, {3}, rc::Role::kParam, rc::Init::kOnes);
  const int h = g.add_tensor("h", REMAT_DTYPE_F32, {4, 3}, rc::Role::kActivation);
  const int loss = g.add_tensor("loss", REMAT_DTYPE_F32, {1}, rc::Role::kLoss);
  g.inputs = {x};
  g.labels = {y};
  g.params = {w};
  g.loss = loss;
  g.add_op(remat::OpCode::kBiasAdd, {x, w}, {h});
  g.add_op(remat::OpCode::kMse, {h, y}, {loss});
  const std::vector<rc::Op> forward = g.ops;
  rc::append_eval_program(g, forward);
  assert_int_equal(g.eval_ops, 2);
  assert_string_equal(g.tensors[g.outputs[0]].name.c_str(), "predictions");
  rc::Graph no_loss;
  try {
    rc::append_eval_program(no_loss, {});
    fail_msg("a graph without a loss got an eval program");
  } catch (const rc::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "no forward op writes the loss"));
  }
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_eval_program_is_the_forward_pass_without_dropout),
      cmocka_unit_test(the_eval_program_leaves_the_steps_placement_as_it_is),
      cmocka_unit_test(the_prediction_of_an_mse_loss_is_called_predictions),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
