// Recomputation and spilling are exact: for every template and strategy, with dropout on,
// parameters and buffers after five steps are byte-identical to training without them (and to
// training on any number of CPU threads); and they save memory.
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "io/synthetic_task.h"
#include "training_harness.h"

static const char* const kModels[] = {
    "mlp:layers=6,width=32,in=16,classes=4,dropout=0.2",
    "resmlp:layers=6,width=32,in=16,classes=4,dropout=0.2",
    "transformer:layers=3,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3,dropout=0.1",
    // Convolutional networks: batch norms' running statistics are compared too (they would
    // differ if a recomputed batch norm updated them again); the ResNet has shortcuts across
    // its split points and strided 1x1 convolutions, the DS-CNN depthwise ones.
    "resnet:depth=14,width=4,in=3x8x8,classes=4",
    // 32 and 64 channels: its unit-stride 3x3 convolutions and their gradients run as Winograd's
    // (backends/cpu/conv/winograd.h), the weight gradient's sums in parts.
    "resnet:depth=8,width=32,in=3x8x8,classes=4",
    "dscnn:blocks=3,width=8,in=1x12x6,classes=4",
    "cnn:channels=4x8,in=2x8x8,classes=3",
};

// Parameters after |steps| steps of |model| under |strategy| with AdamW.
static std::vector<uint8_t> train(const std::string& model, const std::string& strategy,
                                  int steps = 5, uint64_t budget = 0, uint64_t device_budget = 0,
                                  size_t threads = 0) {
  TrainingRun run(model, 8, "adamw:lr=0.01,weight_decay=0.01", 3, strategy, budget, device_budget,
                  threads);
  remat::io::SyntheticTask task(model, 8, 3);
  for (int s = 0; s < steps; ++s) {
    const auto values = task.batch(static_cast<uint64_t>(s));
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) run.set(names[i], values[i].data(), values[i].size());
    run.step();
  }
  return run.params();
}

// The plan of |model| under |strategy| recomputes something (else identity would prove nothing).
static void expect_recompute(const std::string& model, const std::string& strategy) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 8;
  o.strategy = strategy;
  const auto r = remat::compiler::compile(o);
  if (!(r.report.recomputed_flops > 0))
    fail_msg("%s --strategy %s recomputes nothing", model.c_str(), strategy.c_str());
}

static void check_strategy(const std::string& strategy) {
  for (const char* model : kModels) {
    expect_recompute(model, strategy);
    if (train(model, "none") != train(model, strategy)) {
      fail_msg("%s with --strategy %s: parameters differ from --strategy none", model,
               strategy.c_str());
    }
  }
}

static void sqrt_is_byte_identical_to_no_recompute(void**) { check_strategy("sqrt"); }

// The CPU kernels cut their work so that no thread sums what another sums: any thread count
// gives the bits of one thread, with recomputation too.
static void every_thread_count_gives_the_bits_of_one_thread(void**) {
  for (const char* model : kModels) {
    const std::vector<uint8_t> one = train(model, "none", 5, 0, 0, 1);
    for (size_t threads : {size_t{2}, size_t{3}}) {
      if (train(model, "none", 5, 0, 0, threads) != one)
        fail_msg("%s: %zu threads differ from 1", model, threads);
    }
    if (train(model, "sqrt", 5, 0, 0, 3) != one)
      fail_msg("%s: sqrt on 3 threads differs from none on 1", model);
  }
}
static void selective_is_byte_identical_to_no_recompute(void**) { check_strategy("selective"); }

static void budget_is_byte_identical_to_no_recompute(void**) {
  for (const char* model : kModels) {
    // Halfway between the arenas of sqrt and none: it fits, and something must be recomputed.
    remat::compiler::CompileOptions o;
    o.model = model;
    o.batch = 8;
    const uint64_t none = remat::compiler::compile(o).report.arena_bytes;
    o.strategy = "sqrt";
    const uint64_t half = (none + remat::compiler::compile(o).report.arena_bytes) / 2;
    o.strategy = "budget";
    o.arena_budget = half;
    const auto r = remat::compiler::compile(o);
    assert_true(r.report.arena_bytes <= half);
    assert_true(r.report.recomputed_flops > 0);
    if (train(model, "none") != train(model, "budget", 5, half))
      fail_msg("%s: budget differs from none", model);
  }
}

// Strategy auto's options for |model| as train() compiles it, without a budget yet.
static remat::compiler::CompileOptions auto_options(const char* model) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 8;
  o.optimizer = "adamw:lr=0.01,weight_decay=0.01";
  o.strategy = "auto";
  return o;
}

// The figures of auto's smallest schedule of |model|, whatever its arena.
static remat::compiler::CompileReport smallest_auto(const char* model) {
  remat::compiler::CompileOptions o = auto_options(model);
  o.arena_budget = UINT64_MAX / 4;
  o.auto_smallest = true;
  return remat::compiler::compile(o).report;
}

// Auto at its smallest arena: nested recomputation (sweeps that recompute segments twice) on
// the deeper models, still the bytes of training without recomputation.
static void auto_with_nested_recomputation_is_byte_identical_to_no_recompute(void**) {
  int nested = 0;
  for (const char* model : kModels) {
    const uint64_t smallest = smallest_auto(model).arena_bytes;
    remat::compiler::CompileOptions o = auto_options(model);
    o.arena_budget = smallest;
    const auto r = remat::compiler::compile(o).report;
    assert_true(r.arena_bytes <= smallest);
    assert_true(r.recomputed_flops > 0);
    nested += r.nested.empty() ? 0 : 1;
    if (train(model, "none") != train(model, "auto", 5, smallest))
      fail_msg("%s: auto differs from none", model);
  }
  assert_true(nested >= 2);  // the comparison covered nested sweeps
  // Below the smallest arena recomputation reaches, auto spills as well.
  const char* model = kModels[2];
  const auto smallest = smallest_auto(model);
  remat::compiler::CompileOptions o = auto_options(model);
  o.device_budget = smallest.arena_bytes + smallest.persistent_bytes - 1;
  const auto r = remat::compiler::compile(o).report;
  assert_false(r.spilled.empty());
  if (train(model, "none") != train(model, "auto", 5, 0, o.device_budget))
    fail_msg("%s: auto with spills differs", model);
}

static void spilling_checkpoints_to_host_is_byte_identical_to_no_recompute(void**) {
  for (const char* model : kModels) {
    // A device budget below what `splits` needs without spilling forces copies to host.
    remat::compiler::CompileOptions o;
    o.model = model;
    o.batch = 8;
    o.optimizer = "adamw:lr=0.01,weight_decay=0.01";
    o.strategy = "splits";
    const auto plain = remat::compiler::compile(o).report;
    o.device_budget = plain.arena_bytes + plain.persistent_bytes - 1;
    const auto spilled = remat::compiler::compile(o).report;
    std::printf("%s: splits arena %llu; with spills %llu (+%llu host, %zu spills)\n", model,
                static_cast<unsigned long long>(plain.arena_bytes),
                static_cast<unsigned long long>(spilled.arena_bytes),
                static_cast<unsigned long long>(spilled.host_bytes), spilled.spilled.size());
    assert_true(!spilled.spilled.empty());
    assert_true(spilled.host_bytes > 0);
    assert_true(spilled.arena_bytes + spilled.persistent_bytes <= o.device_budget);
    if (train(model, "none") != train(model, "splits", 5, 0, o.device_budget)) {
      fail_msg("%s: splits with spills differs from none", model);
    }
  }
}

static void many_spills_are_byte_identical_too(void**) {
  // 60% of the arena that splits needs without spilling takes several spills.
  const std::string model = kModels[2];
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 8;
  o.optimizer = "adamw:lr=0.01,weight_decay=0.01";
  o.strategy = "splits";
  const auto plain = remat::compiler::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes * 6 / 10;
  const auto spilled = remat::compiler::compile(o).report;
  assert_true(spilled.spilled.size() >= 5);
  assert_true(train(model, "none") == train(model, "splits", 5, 0, o.device_budget));
}

static void splits_with_spills_fit_half_the_sqrt_arena_of_a_24_layer_transformer(void**) {
  remat::compiler::CompileOptions o;
  o.model = "transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2";
  o.batch = 32;
  o.strategy = "sqrt";
  const auto sqrt = remat::compiler::compile(o).report;
  o.strategy = "splits";
  o.device_budget = sqrt.persistent_bytes + sqrt.arena_bytes / 2;
  const auto spilled = remat::compiler::compile(o).report;
  std::printf(
      "sqrt arena %llu; splits + spill arena %llu, host %llu, %zu spills, %.0f%% of copy time "
      "hidden\n",
      static_cast<unsigned long long>(sqrt.arena_bytes),
      static_cast<unsigned long long>(spilled.arena_bytes),
      static_cast<unsigned long long>(spilled.host_bytes), spilled.spilled.size(),
      100.0 * spilled.hidden_copy_seconds / spilled.copy_seconds);
  assert_true(spilled.arena_bytes <= sqrt.arena_bytes / 2);
}

static void a_host_region_smaller_than_the_plan_is_refused_at_creation(void**) {
  remat::compiler::CompileOptions o;
  o.model = kModels[2];
  o.batch = 8;
  o.strategy = "splits";
  const auto plain = remat::compiler::compile(o);
  o.device_budget = plain.report.persistent_bytes + plain.report.arena_bytes * 6 / 10;
  const auto spilled = remat::compiler::compile(o);
  remat_plan* plan = nullptr;
  assert_int_equal(remat_plan_open(spilled.plan.data(), spilled.plan.size(), &plan, nullptr, 0),
                   REMAT_OK);
  remat_plan_memory_info info;
  remat_plan_memory(plan, &info);
  assert_true(info.host_bytes > 0);
  remat_session_options options;
  remat_session_options_init(&options);
  alignas(64) static unsigned char small[64];
  options.host = small;
  options.host_size = sizeof(small);
  remat_session* session = nullptr;
  char message[256];
  assert_int_equal(remat_session_create(plan, &options, &session, message, sizeof(message)),
                   REMAT_ERROR_ARENA_TOO_SMALL);
  assert_null(session);
  assert_non_null(std::strstr(message, "host region is 64 bytes; the plan needs"));
  remat_plan_close(plan);
}

static void manual_is_byte_identical_on_every_template_including_a_shortcut_tensor(void**) {
  const struct {
    const char* model;
    const char* strategy;
  } cases[] = {
      // A dropout output and a pre-activation: the recomputed mask must equal the first one.
      {kModels[0], "manual:fc1.dropout,fc3.out"},
      // fc2.residual feeds both the next block and the shortcut around it.
      {kModels[1], "manual:fc2.residual"},
      {kModels[2],
       "manual:encoder.layer.0.attention.output.LayerNorm.out,encoder.layer.1.output.LayerNorm."
       "out"},
      // A block input that its shortcut also reads, and a batch norm's output.
      {kModels[3], "manual:layer1.1.relu2,layer2.0.bn1.out"},
  };
  for (const auto& c : cases) {
    expect_recompute(c.model, c.strategy);
    if (train(c.model, "none") != train(c.model, c.strategy)) {
      fail_msg("%s with --strategy %s: parameters differ from --strategy none", c.model,
               c.strategy);
    }
  }
}

static uint64_t arena(const std::string& model, const std::string& strategy) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = 32;
  o.strategy = strategy;
  return remat::compiler::compile(o).report.arena_bytes;
}

static void sqrt_needs_a_quarter_of_the_arena_on_a_24_layer_transformer(void**) {
  const std::string model =
      "transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2";
  const uint64_t none = arena(model, "none"), sqrt = arena(model, "sqrt"),
                 selective = arena(model, "selective");
  std::printf(
      "24-layer transformer, batch 32: none %llu, sqrt %llu (%.3f), selective %llu (%.3f)\n",
      static_cast<unsigned long long>(none), static_cast<unsigned long long>(sqrt),
      static_cast<double>(sqrt) / static_cast<double>(none),
      static_cast<unsigned long long>(selective),
      static_cast<double>(selective) / static_cast<double>(none));
  assert_true(sqrt * 4 <= none);
  assert_true(selective < none);
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sqrt_is_byte_identical_to_no_recompute),
      cmocka_unit_test(every_thread_count_gives_the_bits_of_one_thread),
      cmocka_unit_test(selective_is_byte_identical_to_no_recompute),
      cmocka_unit_test(budget_is_byte_identical_to_no_recompute),
      cmocka_unit_test(auto_with_nested_recomputation_is_byte_identical_to_no_recompute),
      cmocka_unit_test(spilling_checkpoints_to_host_is_byte_identical_to_no_recompute),
      cmocka_unit_test(many_spills_are_byte_identical_too),
      cmocka_unit_test(splits_with_spills_fit_half_the_sqrt_arena_of_a_24_layer_transformer),
      cmocka_unit_test(a_host_region_smaller_than_the_plan_is_refused_at_creation),
      cmocka_unit_test(manual_is_byte_identical_on_every_template_including_a_shortcut_tensor),
      cmocka_unit_test(sqrt_needs_a_quarter_of_the_arena_on_a_24_layer_transformer),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
