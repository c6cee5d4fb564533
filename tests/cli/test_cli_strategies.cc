// Strategies, budgets and spilling as a user asks for them on the command line: what each
// budget flag plans, what compile and inspect report of it, and that every strategy trains to
// the bytes of --strategy none.
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

using remat_test::expect;
using remat_test::file_bytes;
using remat_test::read_after;
using remat_test::Result;
using remat_test::run_remat;
using remat_test::tmp;
using remat_test::train_and_save;

namespace {

// Figures of a plan, read from the report `remat compile` prints.
struct Figures {
  unsigned long long arena = 0, persistent = 0, host = 0;
  unsigned long long widening = 0;  // a 16-bit plan's workspace (0: none stated)
  unsigned spills = 0;
  double recomputed_percent = 0;
};

Figures figures_of(const std::string& report) {
  Figures f;
  read_after(report, "arena:", "%llu", &f.arena);
  read_after(report, "persistent:", "%llu", &f.persistent);
  read_after(report, "host spill:", "%llu", &f.host);
  if (report.find("workspace:") != std::string::npos)
    read_after(report, "workspace:", "%llu", &f.widening);
  // "host spill:   N bytes (N KiB), K checkpoints spilled"
  const size_t line = report.find("host spill:");
  const size_t comma = report.find("), ", line);
  if (comma == std::string::npos ||
      std::sscanf(report.c_str() + comma + 3, "%u checkpoints spilled", &f.spills) != 1) {
    fail_msg("no spill count in:\n%s", report.c_str());
  }
  read_after(report, "recomputed ", "%lf", &f.recomputed_percent);
  return f;
}

// Compiles `MODEL FLAGS` to |plan| and returns the figures it reports.
Figures compile_figures(const std::string& model_and_flags, const std::string& plan) {
  const Result r = run_remat("compile " + model_and_flags + " -o " + plan);
  expect(r, 0, "wrote");
  return figures_of(r.out);
}

// A device budget that makes `MODEL FLAGS` spill: the smallest of a few budgets below what it
// needs without spilling (its persistent bytes plus 60%, 80%, 90% of its arena, then one byte
// less than all of it) that compiles with at least one spill. Which checkpoints go to host is
// the cost model's choice; the tests only need that some do.
unsigned long long spilling_budget(const std::string& model_and_flags, const std::string& plan) {
  const Figures plain = compile_figures(model_and_flags, plan);
  for (unsigned long long tenths : {6ull, 8ull, 9ull, 10ull}) {
    const unsigned long long budget =
        plain.persistent + plain.widening + plain.arena * tenths / 10 - (tenths == 10 ? 1 : 0);
    const Result r = run_remat("compile " + model_and_flags + " --device-budget " +
                               std::to_string(budget) + " -o " + plan);
    if (r.code == 0 && figures_of(r.out).spills > 0) return budget;
  }
  fail_msg("%s: no device budget below %llu bytes makes it spill", model_and_flags.c_str(),
           plain.persistent + plain.widening + plain.arena);
  return 0;
}

}  // namespace

// A budget without --strategy compiles `auto`: within the budget, and what it chose is printed.
static void a_budget_alone_compiles_the_fastest_plan_that_fits(void**) {
  const std::string model =
      "transformer:layers=4,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3 --batch 8";
  const std::string plan = tmp("auto.rplan");
  const Figures none = compile_figures(model, plan);
  const unsigned long long budget = none.arena / 3;
  const Result r =
      run_remat("compile " + model + " --arena-budget " + std::to_string(budget) + " -o " + plan);
  expect(r, 0, "strategy:     auto");
  expect(r, 0, "schedules planned");
  expect(r, 0, "predicted:");
  const Figures f = figures_of(r.out);
  assert_true(f.arena <= budget);
  assert_true(f.recomputed_percent > 0);
  expect(run_remat("inspect " + plan), 0, "auto");
  expect(run_remat("train " + plan + " --steps 2"), 0, "step 2");
  // A device budget (arena + persistent) instead: spilling allowed. A fifth of none's arena
  // needs spilling (no schedule fits it without: the host-budget-0 case below).
  const std::string device = std::to_string(none.persistent + none.arena / 5);
  const Result spilled =
      run_remat("compile " + model + " --device-budget " + device + " -o " + plan);
  expect(spilled, 0, "strategy:     auto");
  const Figures g = figures_of(spilled.out);
  assert_true(g.arena + g.persistent <= std::stoull(device));
  // Bad budgets: named, and nothing written over the plan.
  expect(run_remat("compile " + model + " --arena-budget 1KiB -o " + plan), 1,
         "no schedule fits an arena of 1024 bytes");
  expect(
      run_remat("compile " + model + " --device-budget " + device + " --host-budget 0 -o " + plan),
      1, "with no host memory to spill to (host budget 0)");
  expect(run_remat("compile " + model + " --strategy auto -o " + plan), 1,
         "strategy 'auto' needs a budget");
  expect(run_remat("compile " + model + " --strategy sqrt --arena-budget 1MiB -o " + plan), 2,
         "--arena-budget applies to --strategy budget or auto");
  expect(run_remat("compile " + model + " --strategy sqrt --budget 1MiB -o " + plan), 2,
         "--budget applies to --strategy budget or auto");
  expect(run_remat("compile " + model + " --host-budget 1MiB -o " + plan), 2,
         "--host-budget applies to --strategy auto");
  expect(run_remat("compile " + model + " --arena-budget 1MiB --host-budget 1MiB -o " + plan), 2,
         "--host-budget needs --device-budget");
  for (const char* flag : {"--arena-budget", "--device-budget", "--host-budget", "--budget"}) {
    const std::string device =
        std::string(flag) == "--device-budget" ? "" : " --device-budget 1MiB";
    expect(run_remat("compile " + model + device + " " + flag + " 12XB -o " + plan), 2,
           (std::string(flag) + " '12XB'").c_str());
  }
  expect(run_remat("inspect " + plan), 0, "auto");
}

// --budget, deprecated, is --arena-budget: the same plan bytes, one line on stderr; both at once
// is a usage error naming both. The same in train.
static void the_deprecated_budget_is_the_arena_budget(void**) {
  const std::string model =
      "transformer:layers=4,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3 --batch 8";
  const std::string old_plan = tmp("budget-old.rplan"), new_plan = tmp("budget-new.rplan");
  const Figures none = compile_figures(model, old_plan);
  for (const std::string strategy : {"budget", "auto"}) {
    const std::string flags = model + " --strategy " + strategy + " ";
    const std::string arena = std::to_string(none.arena / 2);
    const Result old_run = run_remat("compile " + flags + "--budget " + arena + " -o " + old_plan);
    expect(old_run, 0, "remat: --budget is deprecated; use --arena-budget (the same meaning)");
    const Result new_run =
        run_remat("compile " + flags + "--arena-budget " + arena + " -o " + new_plan);
    expect(new_run, 0, "strategy:");
    if (new_run.out.find("deprecated") != std::string::npos)
      fail_msg("deprecated without --budget:\n%s", new_run.out.c_str());
    if (file_bytes(old_plan) != file_bytes(new_plan))
      fail_msg("--budget and --arena-budget %s: plans differ", strategy.c_str());
  }
  expect(run_remat("compile " + model + " --budget 1MiB --arena-budget 1MiB -o " + new_plan), 2,
         "--budget and --arena-budget");
  expect(run_remat("train " + model + " --budget 1MiB --arena-budget 1MiB --steps 1"), 2,
         "--budget and --arena-budget");
  expect(run_remat("train " + model + " --strategy budget --budget " +
                   std::to_string(none.arena / 2) + " --steps 1"),
         0, "remat: --budget is deprecated");
}

static void compile_and_inspect_report_host_spill_bytes_and_spills_at_a_device_budget(void**) {
  const std::string model =
      "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=8,vocab=20,classes=3 --batch 4";
  const std::string plan = tmp("spilled.rplan");
  const Figures plain = compile_figures(model + " --strategy splits", plan);
  assert_int_equal(plain.host, 0);
  assert_int_equal(plain.spills, 0);
  const std::string budget = std::to_string(spilling_budget(model + " --strategy splits", plan));
  const Result compiled = run_remat("compile " + model + " --strategy splits --device-budget " +
                                    budget + " -o " + plan);
  expect(compiled, 0, "wrote");
  const Figures f = figures_of(compiled.out);
  if (f.spills == 0 || f.host == 0)
    fail_msg("nothing spilled at --device-budget %s:\n%s", budget.c_str(), compiled.out.c_str());
  assert_true(f.arena + f.persistent <= std::stoull(budget));
  expect(compiled, 0,
         ("device:       " + std::to_string(f.arena + f.persistent) + " bytes of the " + budget +
          "-byte device budget")
             .c_str());
  // inspect reads the same figures back from the plan file.
  const Result text = run_remat("inspect " + plan);
  expect(text, 0, ("host spill:   " + std::to_string(f.host) + " bytes (").c_str());
  expect(text, 0, (", " + std::to_string(f.spills) + " checkpoints spilled").c_str());
  const Result json = run_remat("inspect " + plan + " --json");
  expect(json, 0, ("\"host_bytes\": " + std::to_string(f.host) + ",").c_str());
  expect(json, 0, ("\"spills\": " + std::to_string(f.spills) + ",").c_str());
  expect(json, 0, ("\"device_budget_bytes\": " + budget + ",").c_str());
}

static void a_device_budget_that_spilling_cannot_meet_fails_saying_by_how_many_bytes(void**) {
  const std::string model =
      "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=8,vocab=20,classes=3 --batch 4";
  const std::string plan = tmp("over-budget.rplan");
  const Figures plain = compile_figures(model + " --strategy splits", plan);
  std::remove(plan.c_str());
  // One byte more than the persistent region: no arena fits in what is left.
  const unsigned long long budget = plain.persistent + 1;
  const Result r = run_remat("compile " + model + " --strategy splits --device-budget " +
                             std::to_string(budget) + " -o " + plan);
  expect(r, 1, ("device budget " + std::to_string(budget) + " bytes is too small").c_str());
  unsigned long long needs = 0, over = 0;
  read_after(r.out, "still needs ", "%llu", &needs);
  read_after(r.out, "bytes of arena and persistent memory (", "%llu", &over);
  if (over == 0 || needs != budget + over) {
    fail_msg("expected the step's need minus the budget as the excess, got:\n%s", r.out.c_str());
  }
  expect(r, 1, (std::to_string(over) + " over)").c_str());
  assert_null(std::fopen(plan.c_str(), "rb"));  // no plan written
}

static void saved_parameters_are_byte_identical_for_every_strategy_template_and_precision(void**) {
  const struct {
    const char* model;
    const char* manual;
  } templates[] = {
      {"mlp:layers=4,width=16,in=8,classes=3,dropout=0.2", "manual:fc1.dropout,fc3.out"},
      {"resmlp:layers=4,width=16,in=8,classes=3,dropout=0.2", "manual:fc2.residual"},
      {"transformer:layers=2,hidden=16,heads=2,ffn=32,seq=8,vocab=20,classes=3,dropout=0.1",
       "manual:encoder.layer.0.attention.output.LayerNorm.out,encoder.layer.1.output.LayerNorm."
       "out"},
  };
  const std::string plan = tmp("identity.rplan");
  // At every precision: a 16-bit plan recomputes and spills its 16-bit activations exactly too.
  for (const char* precision : {"fp32", "bf16", "fp16"})
    for (const auto& t : templates) {
      const std::string base = std::string(t.model) +
                               " --batch 4 --seed 3 --optimizer adamw:lr=0.01,weight_decay=0.01" +
                               " --precision " + precision;
      const Figures none = compile_figures(base + " --strategy none", plan);
      const Figures sqrt = compile_figures(base + " --strategy sqrt", plan);
      // Halfway between the arenas of sqrt and none: budget has to recompute something.
      const unsigned long long half = (none.arena + sqrt.arena) / 2;
      const unsigned long long device = spilling_budget(base + " --strategy splits", plan);
      const struct {
        std::string flags;
        bool must_recompute, must_spill;
      } runs[] = {
          {"--strategy sqrt", true, false},
          {"--strategy selective", true, false},
          {"--strategy splits", false,
           false},  // on an mlp every split point is kept: nothing to recompute
          {"--strategy budget --arena-budget " + std::to_string(half), true, false},
          {std::string("--strategy ") + t.manual, true, false},
          {"--strategy splits --device-budget " + std::to_string(device), false, true},
      };
      const std::vector<uint8_t> initial = train_and_save(base + " --strategy none --steps 0");
      const std::vector<uint8_t> reference = train_and_save(base + " --strategy none --steps 5");
      // Five steps change the parameters, so equal files below mean equal training.
      if (reference.empty() || reference == initial)
        fail_msg("%s %s: five steps saved the initial parameters", t.model, precision);
      for (const auto& run : runs) {
        const Figures f = compile_figures(base + " " + run.flags, plan);
        if (run.must_recompute && !(f.recomputed_percent > 0))
          fail_msg("%s %s recomputes nothing", t.model, run.flags.c_str());
        if (run.must_spill && f.spills == 0)
          fail_msg("%s %s spills nothing", t.model, run.flags.c_str());
        std::printf("%s %s %s: arena %llu, recomputed %.1f%%, %u spills\n", t.model, precision,
                    run.flags.c_str(), f.arena, f.recomputed_percent, f.spills);
        if (train_and_save(base + " " + run.flags + " --steps 5") != reference) {
          fail_msg("%s %s %s: the saved parameters differ from --strategy none's", t.model,
                   precision, run.flags.c_str());
        }
      }
    }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_budget_alone_compiles_the_fastest_plan_that_fits),
      cmocka_unit_test(the_deprecated_budget_is_the_arena_budget),
      cmocka_unit_test(compile_and_inspect_report_host_spill_bytes_and_spills_at_a_device_budget),
      cmocka_unit_test(a_device_budget_that_spilling_cannot_meet_fails_saying_by_how_many_bytes),
      cmocka_unit_test(
          saved_parameters_are_byte_identical_for_every_strategy_template_and_precision),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
