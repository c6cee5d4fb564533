// Compiler: templates build what docs/templates.md says, bad specs are named, plans verify.
#include "tests/cmocka_cpp.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/autodiff.h"
#include "compiler/builder.h"
#include "compiler/compiler.h"
#include "compiler/optimizer.h"
#include "compiler/schedule.h"
#include "remat/remat.h"

using remat::compiler::compile;
using remat::compiler::CompileError;
using remat::compiler::CompileOptions;

static CompileOptions options(const std::string& model, int64_t batch = 4) {
  CompileOptions o;
  o.model = model;
  o.batch = batch;
  return o;
}

// Asserts that compiling |o| fails with a message containing |needle|.
static void expect_error(const CompileOptions& o, const char* needle) {
  try {
    compile(o);
  } catch (const CompileError& e) {
    if (std::strstr(e.what(), needle) == nullptr) {
      fail_msg("message '%s' does not mention '%s'", e.what(), needle);
    }
    return;
  }
  fail_msg("compiling '%s' succeeded", o.model.c_str());
}

static void mlp_has_pytorch_parameter_names_and_layouts(void**) {
  const auto r = compile(options("mlp:layers=2,width=8,in=3,classes=5"));
  const auto& g = r.graph;
  const char* names[] = {"fc0.weight", "fc0.bias",   "fc1.weight",
                         "fc1.bias",   "fc2.weight", "fc2.bias"};
  assert_int_equal(g.params.size(), 6);
  for (int i = 0; i < 6; ++i) assert_string_equal(g.tensors[g.params[i]].name.c_str(), names[i]);
  assert_true((g.tensors[g.find("fc0.weight")].shape == std::vector<int64_t>{8, 3}));
  assert_true((g.tensors[g.find("fc2.weight")].shape == std::vector<int64_t>{5, 8}));
  assert_true((g.tensors[g.find("fc2.bias")].shape == std::vector<int64_t>{5}));
}

static void transformer_has_bert_parameter_names_and_layouts(void**) {
  const auto r =
      compile(options("transformer:layers=2,hidden=8,heads=2,ffn=16,seq=5,vocab=11,classes=3"));
  const auto& g = r.graph;
  // 4 embedding tensors, 16 per layer, pooler 2, classifier 2.
  assert_int_equal(g.params.size(), 4 + 2 * 16 + 4);
  auto shape = [&](const char* n) {
    const int t = g.find(n);
    if (t < 0) fail_msg("no tensor '%s'", n);
    return g.tensors[t].shape;
  };
  assert_true((shape("embeddings.word_embeddings.weight") == std::vector<int64_t>{11, 8}));
  assert_true((shape("embeddings.position_embeddings.weight") == std::vector<int64_t>{5, 8}));
  assert_true((shape("encoder.layer.1.attention.self.query.weight") == std::vector<int64_t>{8, 8}));
  assert_true((shape("encoder.layer.1.intermediate.dense.weight") == std::vector<int64_t>{16, 8}));
  assert_true((shape("encoder.layer.1.output.dense.weight") == std::vector<int64_t>{8, 16}));
  assert_true(
      (shape("encoder.layer.0.attention.output.LayerNorm.bias") == std::vector<int64_t>{8}));
  assert_true((shape("pooler.dense.weight") == std::vector<int64_t>{8, 8}));
  assert_true((shape("classifier.weight") == std::vector<int64_t>{3, 8}));
}

static void every_parameter_gets_exactly_one_update(void**) {
  for (const char* opt : {"sgd:lr=0.1", "sgd:lr=0.1,momentum=0.9", "adam:lr=0.001",
                          "adamw:lr=0.001,weight_decay=0.01"}) {
    CompileOptions o = options(
        "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=5,vocab=11,classes=3,dropout=0.1");
    o.optimizer = opt;
    const auto r = compile(o);
    std::vector<int> updates(r.graph.tensors.size(), 0);
    for (const auto& op : r.graph.ops) {
      if (op.code == remat::OpCode::kSgdUpdate || op.code == remat::OpCode::kAdamUpdate)
        updates[op.inputs[0]]++;
    }
    for (int p : r.graph.params) assert_int_equal(updates[p], 1);
  }
}

// A Linear is one matmul reading its bias (no bias_add); the bias's gradient is reduce_leading
// of the product's gradient, the tensor the weight's gradient matmul reads, and is what the
// bias's update reads.
static void a_linear_is_one_matmul_with_its_bias_whose_gradient_sums_the_products(void**) {
  CompileOptions o = options("mlp:layers=1,width=8,in=3,classes=5");
  o.optimizer = "sgd:lr=0.1";
  const auto r = compile(o);
  const auto& g = r.graph;
  const int w = g.find("fc1.weight"), b = g.find("fc1.bias");
  int forward = -1, bias_grad = -1, updated_with = -1;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.code == remat::OpCode::kBiasAdd) fail_msg("op %zu is a bias_add", i);
    if (op.phase == remat::compiler::Phase::kForward && op.code == remat::OpCode::kMatMul &&
        op.inputs[1] == w) {
      assert_int_equal(op.inputs.size(), 3);
      assert_int_equal(op.inputs[2], b);
      forward = static_cast<int>(i);
    }
    if (op.code == remat::OpCode::kSgdUpdate && op.inputs[0] == b) updated_with = op.inputs[1];
  }
  assert_true(forward >= 0);
  for (const auto& op : g.ops) {
    if (op.code == remat::OpCode::kReduceLeading && op.outputs[0] == updated_with)
      bias_grad = op.inputs[0];
  }
  if (bias_grad < 0) fail_msg("fc1.bias's update reads no reduce_leading's sum");
  bool weight_grad_reads_it = false;  // dW = dC^T x: the weight's gradient reads the same dC
  for (const auto& op : g.ops) {
    if (op.phase == remat::compiler::Phase::kBackward && op.code == remat::OpCode::kMatMul &&
        op.inputs[0] == bias_grad) {
      weight_grad_reads_it = true;
    }
  }
  assert_true(weight_grad_reads_it);
}

static void compiled_plans_pass_runtime_verification(void**) {
  for (const char* model :
       {"mlp:layers=3,width=16,in=8,classes=4,dropout=0.2",
        "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=6,vocab=20,classes=3,dropout=0.1"}) {
    const auto r = compile(options(model));
    remat_plan* plan = nullptr;
    char message[256];
    assert_int_equal(remat_plan_open(r.plan.data(), r.plan.size(), &plan, message, sizeof(message)),
                     REMAT_OK);
    remat_plan_memory_info info;
    assert_int_equal(remat_plan_memory(plan, &info), REMAT_OK);
    assert_int_equal(info.arena_bytes, r.report.arena_bytes);
    assert_true(r.report.lower_bound <= r.report.arena_bytes);
    remat_plan_close(plan);
  }
}

static void bad_model_strings_are_named_in_the_error(void**) {
  expect_error(options("vgg:layers=2"),
               "unknown template 'vgg' (templates: mlp, resmlp, transformer, cnn, resnet, dscnn)");
  expect_error(options("mlp:layers=2,width=8,in=3"), "missing classes=N");
  expect_error(options("mlp:layers=two,width=8,in=3,classes=2"), "layers=two");
  expect_error(options("mlp:layers=2,width=8,in=3,classes=2,depth=3"), "unknown key 'depth'");
  expect_error(options("mlp:layers=2,width=0,in=3,classes=2"), "width=0");
  expect_error(options("mlp:layers=2,width=8,in=3,classes=2,dropout=1"), "dropout=1");
  expect_error(options("mlp:layers=2,,width=8"), "expected key=value");
  expect_error(options("transformer:layers=1,hidden=10,heads=3,ffn=8,seq=4,vocab=5,classes=2"),
               "hidden=10 is not a multiple of heads=3");
  expect_error(options("mlp:layers=1,width=8,in=3,classes=2", 0), "batch 0");
}

static void bad_convolutional_model_strings_are_named_in_the_error(void**) {
  expect_error(options("resnet:depth=21,in=3x8x8,classes=2"), "depth=21 is not 6n+2");
  expect_error(options("resnet:depth=6008,in=3x8x8,classes=2"),
               "depth=6008 is over the limit of 6002");
  expect_error(options("resnet:depth=8,in=3x2x2,classes=2"), "in=3x2x2 is too small");
  expect_error(options("resnet:depth=8,in=3x8,classes=2"),
               "in=3x8 has 2 values, expected 3 (CxHxW)");
  expect_error(options("cnn:channels=4x0,in=3x8x8,classes=2"),
               "channels=4x0 is not of the form C1xC2x...");
  expect_error(options("cnn:channels=4x4x4x4,in=3x8x8,classes=2"), "stage 3 gets a 1x1 image");
  expect_error(options("dscnn:blocks=1,in=1x1x1,classes=2"),
               "conv1: the filter does not fit input 'x'");
  expect_error(options("dscnn:blocks=0,in=1x49x10,classes=2"), "blocks=0");
  // Batch 1 and a 1x1 image in the last stage: one value per channel, no variance.
  expect_error(options("resnet:depth=8,in=3x4x4,classes=2", 1), "sees 1 value per channel");
}

static void bad_optimizer_and_strategy_are_named_in_the_error(void**) {
  CompileOptions o = options("mlp:layers=1,width=8,in=3,classes=2");
  o.optimizer = "rmsprop:lr=0.1";
  expect_error(o, "unknown kind 'rmsprop'");
  o.optimizer = "sgd:lr=0.1,momentum=1.5";
  expect_error(o, "momentum=1.5");
  o.optimizer = "adam:lr=0.1,beta3=0.5";
  expect_error(o, "unknown key 'beta3'");
  o.optimizer = "sgd";
  o.strategy = "magic";
  expect_error(o, "strategy 'magic'");
}

// A dropout output made in one segment and first read in a later one (a shortcut across a
// checkpoint) that the backward pass never reads itself: recompute must still rebuild it.
static std::vector<uint8_t> shortcut_params(bool recompute) {
  using namespace remat::compiler;
  Graph g;
  Builder b(&g);
  const int x = b.input("x", REMAT_DTYPE_F32, {4, 8});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {4});
  const int h = b.linear(x, 8, "fc0");
  const int t = b.dropout(h, 0.25f, "shortcut");
  const int c = b.relu(b.linear(h, 8, "fc1"), "c");
  const int v = b.add(t, c, "v");
  const int r = b.relu(b.linear(v, 8, "fc2"), "r");
  b.softmax_cross_entropy(b.linear(r, 3, "head"), labels);
  const size_t forward = g.ops.size();
  append_backward_and_updates(g, parse_optimizer("sgd:lr=0.1"), FiniteChecks::kOn);
  if (recompute) apply_recompute(g, forward, {c, r});
  CompileReport report;
  report.model = "custom";
  report.batch = 4;
  const MemoryPlan memory = plan_memory(g, 64);
  std::vector<uint8_t> bytes = write_plan(g, memory, report, 9);
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  char message[256];
  if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK)
    fail_msg("%s", message);
  if (remat_session_create(plan, nullptr, &session, message, sizeof(message)) != REMAT_OK)
    fail_msg("%s", message);
  std::vector<float> xs(32);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) / 7.0f - 0.4f;
  const int32_t ys[4] = {0, 1, 2, 1};
  remat_session_set_input(session, "x", xs.data(), xs.size() * 4);
  remat_session_set_input(session, "labels", ys, sizeof(ys));
  for (int step = 0; step < 3; ++step) {
    if (remat_session_step(session, nullptr) != REMAT_OK)
      fail_msg("%s", remat_session_last_error(session));
  }
  std::vector<uint8_t> out(8 * 8 * 4);
  remat_session_read_param(session, "fc1.weight", out.data(), out.size());
  remat_session_destroy(session);
  remat_plan_close(plan);
  (void)x;
  return out;
}

// The non-finite guard: a check of the loss before any backward op and of every gradient
// before its update; with `on` each update directly follows its check and the arena is the
// one without checks, with `atomic` every update follows the last check.
static void finite_checks_guard_every_update_and_on_costs_no_arena(void**) {
  using namespace remat::compiler;
  using remat::OpCode;
  for (const char* model :
       {"mlp:layers=3,width=16,in=8,classes=3",
        "transformer:layers=1,hidden=8,heads=2,ffn=16,seq=4,vocab=11,classes=3"}) {
    CompileOptions o = options(model);
    o.strategy = "sqrt";
    o.finite_checks = FiniteChecks::kOff;
    const CompileResult off = compile(o);
    for (FiniteChecks mode : {FiniteChecks::kOn, FiniteChecks::kAtomic}) {
      o.finite_checks = mode;
      const CompileResult r = compile(o);
      const Graph& g = r.graph;
      size_t checks = 0, updates = 0, last_check = 0, first_update = g.ops.size(),
             first_backward = g.ops.size();
      size_t loss_check = g.ops.size();
      for (size_t i = 0; i < g.ops.size(); ++i) {
        const Op& op = g.ops[i];
        if (op.phase == Phase::kBackward && first_backward == g.ops.size()) first_backward = i;
        if (op.code == OpCode::kFiniteCheck) {
          ++checks;
          last_check = i;
          if (op.inputs[0] == g.loss) loss_check = i;
        }
        if (op.code == OpCode::kSgdUpdate) {
          ++updates;
          first_update = std::min(first_update, i);
          // The op before each update checks that update's gradient (on) or is an update or
          // the last check (atomic).
          const Op& before = g.ops[i - 1];
          if (mode == FiniteChecks::kOn) {
            assert_true(before.code == OpCode::kFiniteCheck && before.inputs[0] == op.inputs[1]);
          }
        }
      }
      assert_int_equal(checks, g.params.size() + 1);
      assert_int_equal(updates, g.params.size());
      assert_true(loss_check < first_backward);
      if (mode == FiniteChecks::kAtomic) {
        assert_true(last_check < first_update);
      } else {
        assert_int_equal(r.report.arena_bytes, off.report.arena_bytes);
      }
    }
  }
}

// Deeper than the compiler plans in reasonable time: refused before building, naming the key,
// the value and the limit (docs/templates.md, "Limits").
static void models_deeper_than_the_limit_are_refused_naming_the_key_value_and_limit(void**) {
  expect_error(options("mlp:layers=100001,width=8,in=3,classes=2"),
               "layers=100001 is over the limit of 100000");
  expect_error(options("resmlp:layers=2147483648,width=8,in=3,classes=2"),
               "layers=2147483648 is over the limit of 100000");
  expect_error(options("transformer:layers=10001,hidden=8,heads=2,ffn=16,seq=5,vocab=11,classes=3"),
               "layers=10001 is over the limit of 10000");
  // Still a bad integer first: the limit is about size, not syntax.
  expect_error(options("mlp:layers=0,width=8,in=3,classes=2"), "layers=0 is not an integer");
}

// 65 weights of 2^40 floats (2^42 bytes each) take the persistent region past 2^48 bytes:
// refused naming the tensor and region, never a wrapped-around size.
static void a_region_of_more_than_2_to_the_48_bytes_is_refused(void**) {
  expect_error(options("mlp:layers=64,width=1048576,in=1048576,classes=2", 1),
               "persistent tensors over 281474976710656 bytes");
}

static void a_shortcut_across_a_checkpoint_is_recomputed_exactly(void**) {
  assert_true(shortcut_params(false) == shortcut_params(true));
}

// What a strategy keeps from forward to backward has the checkpoint role in the plan; with no
// recomputation nothing does (every activation is simply kept).
static void chosen_checkpoints_have_the_checkpoint_role(void**) {
  CompileOptions o = options("resmlp:layers=3,width=16,in=8,classes=3");
  o.strategy = "sqrt";
  const auto sqrt = compile(o);
  assert_false(sqrt.report.checkpoints.empty());
  size_t marked = 0;
  for (const auto& t : sqrt.graph.tensors) marked += t.role == remat::compiler::Role::kCheckpoint;
  assert_int_equal(marked, sqrt.report.checkpoints.size());
  for (const std::string& name : sqrt.report.checkpoints) {
    assert_int_equal(static_cast<int>(sqrt.graph.tensors[sqrt.graph.find(name)].role),
                     static_cast<int>(remat::compiler::Role::kCheckpoint));
  }
  o.strategy = "none";
  for (const auto& t : compile(o).graph.tensors)
    assert_true(t.role != remat::compiler::Role::kCheckpoint);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_has_pytorch_parameter_names_and_layouts),
      cmocka_unit_test(transformer_has_bert_parameter_names_and_layouts),
      cmocka_unit_test(every_parameter_gets_exactly_one_update),
      cmocka_unit_test(a_linear_is_one_matmul_with_its_bias_whose_gradient_sums_the_products),
      cmocka_unit_test(compiled_plans_pass_runtime_verification),
      cmocka_unit_test(bad_model_strings_are_named_in_the_error),
      cmocka_unit_test(bad_convolutional_model_strings_are_named_in_the_error),
      cmocka_unit_test(bad_optimizer_and_strategy_are_named_in_the_error),
      cmocka_unit_test(models_deeper_than_the_limit_are_refused_naming_the_key_value_and_limit),
      cmocka_unit_test(finite_checks_guard_every_update_and_on_costs_no_arena),
      cmocka_unit_test(a_region_of_more_than_2_to_the_48_bytes_is_refused),
      cmocka_unit_test(a_shortcut_across_a_checkpoint_is_recomputed_exactly),
      cmocka_unit_test(chosen_checkpoints_have_the_checkpoint_role),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
