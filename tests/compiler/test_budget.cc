// The budget strategy: its chain DP is exact (it agrees with brute force), and on a real graph
// it fits the budget and never recomputes more than sqrt at sqrt's arena.
#include "tests/cmocka_cpp.h"

#include <cstring>
#include <random>

#include "compiler/chain_dp.h"
#include "compiler/compiler.h"

using remat::compiler::ChainStage;

static void dynamic_program_agrees_with_brute_force_on_random_chains(void**) {
  std::mt19937 rng(11);
  int feasible = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 10);
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
    if (dp.cost != brute.cost) fail_msg("trial %d (n=%d, budget %llu): DP cost %g, brute force %g", trial, n,
                                        static_cast<unsigned long long>(budget), dp.cost, brute.cost);
    assert_true(dp.memory <= budget);
    assert_int_equal(dp.memory, remat::compiler::chain_memory(chain, dp));
  }
  assert_true(feasible > 100);  // the comparison was exercised, not vacuous
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
  o.budget = budget;
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
    assert_non_null(std::strstr(e.what(), "is too small: the smallest schedule found needs an arena of"));
    return;
  }
  fail_msg("a 1 MiB budget was accepted");
}

static void budget_without_bytes_is_an_error(void**) {
  try {
    compile("budget", 0);
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "needs a budget"));
    return;
  }
  fail_msg("budget without bytes was accepted");
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dynamic_program_agrees_with_brute_force_on_random_chains),
      cmocka_unit_test(a_budget_that_fits_everything_recomputes_nothing),
      cmocka_unit_test(at_the_sqrt_arena_budget_recomputes_no_more_than_sqrt),
      cmocka_unit_test(a_larger_budget_recomputes_less),
      cmocka_unit_test(a_budget_too_small_says_what_the_smallest_schedule_needs),
      cmocka_unit_test(budget_without_bytes_is_an_error),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
