// The budget strategy: its chain DP is exact (it agrees with brute force), and on a real graph
// it fits the budget and never recomputes more than sqrt at sqrt's arena, nor more than any of
// the split points' regular schedules that fits.
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <cstring>
#include <random>

#include "compiler/autodiff.h"
#include "compiler/strategies/chain_dp.h"
#include "compiler/compiler.h"
#include "compiler/planner.h"
#include "compiler/precision.h"
#include "compiler/schedule.h"
#include "compiler/strategies/schedule_candidate.h"
#include "compiler/strategies/split_point_schedules.h"
#include "compiler/templates/templates.h"

using remat::compiler::ChainStage;

static void dynamic_program_agrees_with_brute_force_on_random_chains(void**) {
  std::mt19937 rng(11);
  int feasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    std::vector<ChainStage> chain(n);
    uint64_t total = 0;
    for (ChainStage& s : chain) {
      s.out = 1 + rng() % 50;
      s.act = s.out + rng() % 200;
      s.cost = static_cast<double>(1 + rng() % 1000);
      total += s.act;
    }
    const uint64_t budget = rng() % (total + 1);
    const auto dp = remat::compiler::solve_chain(chain, budget);
    const auto brute = remat::compiler::brute_force_chain(chain, budget);
    assert_int_equal(dp.feasible, brute.feasible);
    if (!dp.feasible) continue;
    ++feasible;
    if (dp.cost != brute.cost)
      fail_msg("trial %d (n=%d, budget %llu): DP cost %g, brute force %g", trial, n,
               static_cast<unsigned long long>(budget), dp.cost, brute.cost);
    assert_true(dp.memory <= budget);
    assert_int_equal(dp.memory, remat::compiler::chain_memory(chain, dp));
  }
  assert_true(feasible > 100);  // the comparison was exercised, not vacuous
}

// End to end, on models small enough to try every set of checkpoints with the real planner:
// at each budget, the budget strategy recomputes as few FLOPs as the best set that fits.
static void budget_matches_brute_force_over_every_checkpoint_set(void**) {
  for (const char* model : {"mlp:layers=3,width=32,in=16,classes=4,dropout=0.2",
                            "resmlp:layers=2,width=16,in=8,classes=3"}) {
    remat::compiler::Graph base = remat::compiler::build_template(model, 8);
    const size_t forward_ops = base.ops.size();
    remat::compiler::append_backward_and_updates(
        base, remat::compiler::parse_optimizer("sgd:lr=0.01"), remat::compiler::FiniteChecks::kOn);
    const std::vector<int> candidates = remat::compiler::checkpoint_candidates(base, forward_ops);
    assert_true(candidates.size() <= 15);
    // Every subset: its planned arena and recomputed FLOPs.
    std::vector<std::pair<uint64_t, double>> sets;
    for (uint32_t mask = 0; mask < (1u << candidates.size()); ++mask) {
      std::vector<int> kept;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (mask & (1u << i)) kept.push_back(candidates[i]);
      }
      remat::compiler::Graph g = base;
      remat::compiler::apply_recompute(g, forward_ops, kept);
      double recomputed = 0;
      for (const auto& op : g.ops)
        recomputed += op.phase == remat::compiler::Phase::kRecompute ? op.flops : 0.0;
      sets.emplace_back(remat::compiler::plan_memory(g, 64).arena_size, recomputed);
    }
    uint64_t smallest = UINT64_MAX, largest = 0;
    for (const auto& s : sets) {
      smallest = std::min(smallest, s.first);
      largest = std::max(largest, s.first);
    }
    int compared = 0;
    for (int step = 0; step <= 16; ++step) {
      const uint64_t budget = smallest + (largest - smallest) * static_cast<uint64_t>(step) / 16;
      double best = -1;
      for (const auto& s : sets) {
        if (s.first <= budget && (best < 0 || s.second < best)) best = s.second;
      }
      remat::compiler::CompileOptions o;
      o.model = model;
      o.batch = 8;
      o.strategy = "budget";
      o.arena_budget = budget;
      const auto r = remat::compiler::compile(o).report;
      std::printf(
          "%s, budget %llu: budget strategy recomputes %.6g FLOPs (arena %llu), best set %.6g\n",
          model, static_cast<unsigned long long>(budget), r.recomputed_flops,
          static_cast<unsigned long long>(r.arena_bytes), best);
      assert_true(r.arena_bytes <= budget);
      if (r.recomputed_flops > best)
        fail_msg("%s at budget %llu: %g recomputed, %g possible", model,
                 static_cast<unsigned long long>(budget), r.recomputed_flops, best);
      ++compared;
    }
    assert_int_equal(compared, 17);
  }
}

static void a_budget_that_fits_everything_recomputes_nothing(void**) {
  std::vector<ChainStage> chain{{100, 10, 5.0}, {100, 10, 5.0}, {100, 10, 5.0}};
  const auto s = remat::compiler::solve_chain(chain, 300);
  assert_true(s.feasible);
  assert_true(s.cost == 0.0);
}

static remat::compiler::CompileReport compile(const std::string& strategy, uint64_t budget) {
  remat::compiler::CompileOptions o;
  o.model = "transformer:layers=24,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2";
  o.batch = 32;
  o.strategy = strategy;
  o.arena_budget = budget;
  return remat::compiler::compile(o).report;
}

static void at_the_sqrt_arena_budget_recomputes_no_more_than_sqrt(void**) {
  const auto sqrt = compile("sqrt", 0);
  const auto budget = compile("budget", sqrt.arena_bytes);
  std::printf("sqrt: arena %llu, recomputed %.4g; budget: arena %llu, recomputed %.4g\n",
              static_cast<unsigned long long>(sqrt.arena_bytes), sqrt.recomputed_flops,
              static_cast<unsigned long long>(budget.arena_bytes), budget.recomputed_flops);
  assert_true(budget.arena_bytes <= sqrt.arena_bytes);
  assert_true(budget.recomputed_flops <= sqrt.recomputed_flops);
}

// bert-mini at a fifth of none's arena: the chain DP's picks alone recompute 21.4% of the step,
// keeping every other split point (each residual sum) 17.1%.
static void budget_recomputes_no_more_than_any_split_point_schedule_that_fits(void**) {
  remat::compiler::CompileOptions o;
  o.model = "transformer:layers=12,hidden=256,heads=4,ffn=1024,seq=128,vocab=8000,classes=2";
  o.batch = 32;
  o.strategy = "none";
  const uint64_t fifth = remat::compiler::compile(o).report.arena_bytes / 5;
  o.strategy = "budget";
  o.arena_budget = fifth;
  const auto budget = remat::compiler::compile(o).report;

  remat::compiler::Graph g = remat::compiler::build_template(o.model, o.batch);
  const size_t forward_ops = g.ops.size();
  remat::compiler::append_backward_and_updates(g, remat::compiler::parse_optimizer(o.optimizer),
                                               o.finite_checks);
  double best = -1;
  for (std::vector<int>& checkpoints : remat::compiler::split_point_schedules(g, forward_ops)) {
    const auto c =
        remat::compiler::plan_candidate(g, forward_ops, std::move(checkpoints), o.alignment);
    if (c.arena <= fifth && (best < 0 || c.recomputed < best)) best = c.recomputed;
  }
  std::printf(
      "budget: arena %llu of %llu, recomputed %.4g; best split-point schedule that fits: %.4g\n",
      static_cast<unsigned long long>(budget.arena_bytes), static_cast<unsigned long long>(fifth),
      budget.recomputed_flops, best);
  assert_true(best > 0);
  assert_true(budget.arena_bytes <= fifth);
  assert_true(budget.recomputed_flops <= best);
}

static void a_larger_budget_recomputes_less(void**) {
  const auto sqrt = compile("sqrt", 0);
  const auto roomy = compile("budget", sqrt.arena_bytes * 3);
  assert_true(roomy.arena_bytes <= sqrt.arena_bytes * 3);
  assert_true(roomy.recomputed_flops < sqrt.recomputed_flops);
}

static void a_budget_too_small_says_what_the_smallest_schedule_needs(void**) {
  try {
    compile("budget", 1 << 20);
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(
        std::strstr(e.what(), "is too small: the smallest schedule found needs an arena of"));
    return;
  }
  fail_msg("a 1 MiB budget was accepted");
}

static void budget_without_bytes_is_an_error(void**) {
  try {
    compile("budget", 0);
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(),
                                "needs an arena budget (--arena-budget BYTES) or a "
                                "device budget (--device-budget BYTES)"));
    return;
  }
  fail_msg("budget without bytes was accepted");
}

// With a device budget alone, `budget` fits the arena to it less the persistent bytes, as
// `remat size` does: the same schedule as that arena budget given outright.
static void a_device_budget_gives_budget_its_arena_less_the_persistent_bytes(void**) {
  remat::compiler::CompileOptions o;
  o.model = "mlp:layers=8,width=64,in=32,classes=4";
  o.batch = 16;
  o.strategy = "sqrt";
  const auto sqrt = remat::compiler::compile(o).report;
  o.strategy = "budget";
  o.device_budget = sqrt.persistent_bytes + sqrt.arena_bytes;
  const auto by_device = remat::compiler::compile(o);
  o.device_budget = 0;
  o.arena_budget = sqrt.arena_bytes;
  const auto by_arena = remat::compiler::compile(o);
  assert_true(by_device.report.arena_bytes <= sqrt.arena_bytes);
  // The same schedule; the plans differ only in the budget they record.
  assert_true(by_device.report.checkpoints == by_arena.report.checkpoints);
  assert_int_equal(by_device.report.arena_bytes, by_arena.report.arena_bytes);
  assert_true(by_device.report.recomputed_flops == by_arena.report.recomputed_flops);

  o.arena_budget = 0;
  o.device_budget = sqrt.persistent_bytes;
  try {
    remat::compiler::compile(o);
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "the persistent region alone"));
    return;
  }
  fail_msg("a device budget the persistent region fills was accepted");
}

// A 16-bit plan's device budget holds the target backend's widening workspace too (the float32
// copies of one op's 16-bit tensors, beside the arena): `budget` and `auto` fit what it leaves,
// each backend's figure by its own rule, and a budget the workspace fills is refused by name.
static void a_device_budget_holds_the_widening_workspace(void**) {
  remat::compiler::CompileOptions o;
  // Attention's gradient takes 1 MiB an item in float32: the CPU widens it 4 items at a time,
  // the GPUs the batch of 8 whole (it is less than their 32 MiB chunk).
  o.model = "transformer:layers=4,hidden=256,heads=4,ffn=256,seq=128,vocab=100,classes=2";
  o.batch = 8;
  o.precision = remat::compiler::Precision::kBf16;
  const auto none = remat::compiler::compile(o).report;
  assert_true(none.workspace_bytes > 0);
  o.target(remat::compiler::target_profile("opencl"));
  const uint64_t whole = remat::compiler::compile(o).report.workspace_bytes;
  std::printf("workspace: %llu bytes on the cpu, %llu on opencl\n",
              static_cast<unsigned long long>(none.workspace_bytes),
              static_cast<unsigned long long>(whole));
  assert_true(whole > none.workspace_bytes);
  for (const char* backend : {"cpu", "opencl"}) {
    o.target(remat::compiler::target_profile(backend));
    o.strategy = "none";
    const auto unbudgeted = remat::compiler::compile(o).report;
    // Room for the regions as `none` plans them, and half the workspace beside them.
    o.device_budget =
        unbudgeted.arena_bytes + unbudgeted.persistent_bytes + unbudgeted.workspace_bytes / 2;
    for (const char* strategy : {"budget", "auto"}) {
      o.strategy = strategy;
      const auto fitted = remat::compiler::compile(o).report;
      const uint64_t device = fitted.arena_bytes + fitted.persistent_bytes + fitted.workspace_bytes;
      std::printf("%s, %s: arena %llu + persistent %llu + workspace %llu of %llu\n", backend,
                  strategy, static_cast<unsigned long long>(fitted.arena_bytes),
                  static_cast<unsigned long long>(fitted.persistent_bytes),
                  static_cast<unsigned long long>(fitted.workspace_bytes),
                  static_cast<unsigned long long>(o.device_budget));
      assert_int_equal(fitted.workspace_bytes, unbudgeted.workspace_bytes);
      assert_true(device <= o.device_budget);
      assert_true(fitted.arena_bytes < unbudgeted.arena_bytes);
    }
    o.strategy = "budget";
    o.device_budget = unbudgeted.workspace_bytes;
    try {
      remat::compiler::compile(o);
      fail_msg("%s: a device budget the workspace fills was accepted", backend);
    } catch (const remat::compiler::CompileError& e) {
      assert_non_null(std::strstr(e.what(), "the workspace alone"));
    }
    o.device_budget = 0;
  }
}

// A 16-bit plan's workspace does not grow with the batch past the chunks of the ops that widen a
// chunk of their batch at a time (fused attention, the convolutions, their gradients, pooling and
// the softmax family, the GPUs' batch products, and the products over a rank-2 A's rows, whose
// float32 A the CPU rounds a chunk of rows at a time): no op widens a batch-sized tensor whole (the
// class token's select and the embedding's lookup and gradient move or convert their 16-bit tensors
// as they are: backends/shared/widening_slices.h moves_bytes, backends/cpu/widening.h
// reads_16_bit_input; and dropout and batch norm read and write theirs as they are), on every
// backend's rule, in bf16 and fp16. At the smaller batch, each model's batch-sized tensors take
// more than a GPU's batch chunk (kGpuWideningChunkBytes) in float32: the transformer's 64 MiB at
// 512 items; the resnet's last stage, 32 KiB an image for a convolution's input and output, 32
// MiB at 1024; an unfused transformer's scores (softmax, head_matmul), 64 MiB at 64; the mlp's
// and the resmlp's [batch, 1024] activations and their float32 input, 32 MiB each at 8192.
static void a_16_bit_workspace_does_not_grow_with_the_batch(void**) {
  struct Model {
    const char* name;
    int64_t batch;
    remat::compiler::AttentionKernel attention;
  };
  constexpr auto kFused = remat::compiler::AttentionKernel::kFused;
  remat::compiler::CompileOptions o;
  for (const Model model :
       {Model{"transformer:layers=1,hidden=256,heads=4,ffn=256,seq=128,vocab=100,classes=2,"
              "dropout=0.1",
              512, kFused},
        Model{"resnet:depth=8,width=16,in=3x32x32,classes=10", 1024, kFused},
        Model{"transformer:layers=1,hidden=64,heads=4,ffn=64,seq=256,vocab=100,classes=2", 64,
              remat::compiler::AttentionKernel::kUnfused},
        Model{"mlp:layers=4,width=1024,in=1024,classes=10", 8192, kFused},
        Model{"resmlp:layers=4,width=1024,in=1024,classes=10", 8192, kFused}}) {
    o.model = model.name;
    o.attention = model.attention;
    for (const char* backend : {"cpu", "opencl", "cuda"}) {
      o.target(remat::compiler::target_profile(backend));
      for (const auto precision :
           {remat::compiler::Precision::kBf16, remat::compiler::Precision::kFp16}) {
        o.precision = precision;
        o.batch = model.batch;
        const uint64_t at_batch = remat::compiler::compile(o).report.workspace_bytes;
        o.batch = 2 * model.batch;
        const uint64_t at_twice = remat::compiler::compile(o).report.workspace_bytes;
        std::printf("%s, %s, %s: workspace %llu bytes at batch %lld, %llu at %lld\n", model.name,
                    backend, remat::compiler::precision_name(precision),
                    static_cast<unsigned long long>(at_batch), static_cast<long long>(model.batch),
                    static_cast<unsigned long long>(at_twice),
                    static_cast<long long>(2 * model.batch));
        assert_true(at_batch > 0);
        assert_int_equal(at_batch, at_twice);
      }
    }
  }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dynamic_program_agrees_with_brute_force_on_random_chains),
      cmocka_unit_test(budget_matches_brute_force_over_every_checkpoint_set),
      cmocka_unit_test(a_budget_that_fits_everything_recomputes_nothing),
      cmocka_unit_test(at_the_sqrt_arena_budget_recomputes_no_more_than_sqrt),
      cmocka_unit_test(budget_recomputes_no_more_than_any_split_point_schedule_that_fits),
      cmocka_unit_test(a_larger_budget_recomputes_less),
      cmocka_unit_test(a_budget_too_small_says_what_the_smallest_schedule_needs),
      cmocka_unit_test(budget_without_bytes_is_an_error),
      cmocka_unit_test(a_device_budget_gives_budget_its_arena_less_the_persistent_bytes),
      cmocka_unit_test(a_device_budget_holds_the_widening_workspace),
      cmocka_unit_test(a_16_bit_workspace_does_not_grow_with_the_batch),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
