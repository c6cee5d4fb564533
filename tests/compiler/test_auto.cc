// The auto strategy: on graphs small enough to try every keep/recompute/spill assignment it is
// as fast as the best that fits (brute force, written here apart from its search); on every
// graph a larger budget never gives a slower predicted step, the plan fits its budgets, and bad
// budgets are refused with the figures that explain why.
#include "tests/cmocka_cpp.h"

#include <cmath>
#include <cstring>
#include <string>

#include "compiler/strategies/auto.h"
#include "compiler/autodiff.h"
#include "compiler/compiler.h"
#include "compiler/planner.h"
#include "compiler/running_stats.h"
#include "compiler/schedule.h"
#include "compiler/templates/templates.h"
#include "tests/compiler/training_graph.h"

using remat::compiler::AutoOptions;
using remat::compiler::AutoSchedule;
using remat::compiler::Graph;
using remat::compiler::SpillPlacement;

namespace {

using Step = TrainingGraph;

// The optimizer of every training graph here.
constexpr char kSgd[] = "sgd:lr=0.1";

// The CPU's cost model (synchronous copies), or a device's (copies overlap compute).
AutoOptions cost_model(bool asynchronous) {
  AutoOptions o;
  o.cost.copy_bandwidth = asynchronous ? 2e10 : 1e10;
  o.cost.compute_rate = asynchronous ? 5e12 : 5e10;
  o.cost.asynchronous_copies = asynchronous;
  o.cost.alignment = 64;
  return o;
}

// One assignment, priced the way the issue defines it: planned for real, timed by the model.
struct Priced {
  bool fits = false;
  uint64_t device = 0;
  double seconds = 0;
};

Priced price(const Graph& g, const AutoOptions& o) {
  const remat::compiler::MemoryPlan m = remat::compiler::plan_memory(g, o.cost.alignment);
  Priced p;
  p.device = m.arena_size + m.persistent_size;
  p.fits = (o.arena_budget == 0 || m.arena_size <= o.arena_budget) &&
           (o.device_budget == 0 || p.device <= o.device_budget) && m.host_size <= o.host_budget;
  p.seconds = remat::compiler::predicted_step_seconds(g, o.cost);
  return p;
}

// The fastest of every keep / recompute / spill assignment of the candidates that fits (spills
// placed all the same way, each placement tried); seconds < 0 when none fits.
Priced brute_force(const Step& s, const AutoOptions& o, uint64_t* smallest_device) {
  const std::vector<int> candidates =
      remat::compiler::checkpoint_candidates(s.graph, s.forward_ops);
  const bool spills = o.device_budget > 0 && o.host_budget > 0;
  size_t assignments = 1;
  for (size_t i = 0; i < candidates.size(); ++i) assignments *= 3;
  Priced best;
  best.seconds = -1;
  *smallest_device = UINT64_MAX;
  for (size_t code = 0; code < assignments; ++code) {
    std::vector<int> kept, spilled;
    size_t c = code;
    for (size_t i = 0; i < candidates.size(); ++i, c /= 3) {
      if (c % 3 >= 1) kept.push_back(candidates[i]);  // 1: keep, 2: keep and spill
      if (c % 3 == 2) spilled.push_back(candidates[i]);
    }
    if (!spilled.empty() && !spills) continue;
    Graph g = s.graph;
    if (kept != candidates) {  // keeping every candidate is `none`: the graph as it is
      remat::compiler::apply_recompute(g, s.forward_ops, kept);
      remat::compiler::mark_checkpoints(g, kept);
    }
    std::vector<Graph> tries;
    if (spilled.empty()) {
      tries.push_back(std::move(g));
    } else {
      for (SpillPlacement p :
           {SpillPlacement::kHidden, SpillPlacement::kEarlyFree, SpillPlacement::kTight}) {
        if (!o.cost.asynchronous_copies && p != SpillPlacement::kTight) continue;
        try {
          tries.push_back(remat::compiler::with_spilled(g, s.forward_ops, spilled, p, o.cost));
        } catch (const remat::compiler::CompileError&) {
          break;  // a kept tensor only recomputation reads has nothing to spill: keeping it is
                  // another assignment
        }
      }
    }
    for (const Graph& t : tries) {
      const Priced p = price(t, o);
      *smallest_device = std::min(*smallest_device, p.device);
      if (p.fits && (best.seconds < 0 || p.seconds < best.seconds)) best = p;
    }
  }
  return best;
}

// The schedule's graph planned again: what auto reports is what it returns.
void expect_schedule_fits(const AutoSchedule& a, const AutoOptions& o) {
  const Priced p = price(a.graph, o);
  if (!p.fits)
    fail_msg("auto's schedule does not fit: %llu device bytes",
             static_cast<unsigned long long>(p.device));
  assert_int_equal(p.device, a.arena + a.persistent);
  assert_true(p.seconds == a.predicted_seconds);
}

// 6 and 7 candidates (3^7 assignments, each with up to three placements).
const char* const kSmallModels[] = {
    "mlp:layers=1,width=16,in=8,classes=3",
    "mlp:layers=1,width=16,in=8,classes=3,dropout=0.5",
};

}  // namespace

static void auto_is_as_fast_as_brute_force_over_every_keep_recompute_spill_assignment(void**) {
  int compared = 0;
  for (const char* model : kSmallModels) {
    const Step s = training_graph(model, 64, kSgd);
    const size_t n = remat::compiler::checkpoint_candidates(s.graph, s.forward_ops).size();
    if (n < 3 || n > remat::compiler::kExhaustiveCandidates) {
      fail_msg("%s has %zu candidates: pick a model with 3..%zu", model, n,
               remat::compiler::kExhaustiveCandidates);
    }
    for (bool asynchronous : {false, true}) {
      for (bool spilling : {false, true}) {
        AutoOptions o = cost_model(asynchronous);
        // Budgets from below the smallest schedule to above `none`'s.
        uint64_t smallest = 0;
        o.device_budget = UINT64_MAX / 4;
        brute_force(s, o, &smallest);
        const uint64_t none = price(s.graph, o).device;
        const uint64_t persistent =
            remat::compiler::plan_memory(s.graph, o.cost.alignment).persistent_size;
        for (int k = 0; k <= 12; ++k) {
          const uint64_t budget =
              smallest - 64 + (none + 64 - (smallest - 64)) * static_cast<uint64_t>(k) / 12;
          AutoOptions b = o;
          if (spilling) {
            b.device_budget = budget;
          } else {
            // The same device bytes as an arena budget: recomputation alone.
            b.device_budget = 0;
            b.arena_budget = budget > persistent ? budget - persistent : 1;
          }
          uint64_t ignored = 0;
          const Priced want = brute_force(s, b, &ignored);
          bool threw = false;
          AutoSchedule got;
          try {
            got = remat::compiler::auto_schedule(s.graph, s.forward_ops, b);
          } catch (const remat::compiler::NoScheduleFits&) {
            threw = true;
          }
          if (want.seconds < 0) {
            // Auto's family adds nested schedules, which may fit where no plain assignment does.
            if (!threw) assert_true(!got.nested.empty());
            continue;
          }
          if (threw)
            fail_msg("%s, budget %llu: brute force fits, auto found nothing", model,
                     static_cast<unsigned long long>(budget));
          assert_true(got.exhaustive);
          expect_schedule_fits(got, b);
          if (got.predicted_seconds > want.seconds) {
            fail_msg("%s (%s copies, budget %llu): auto %.9g s, brute force %.9g s", model,
                     asynchronous ? "asynchronous" : "synchronous",
                     static_cast<unsigned long long>(budget), got.predicted_seconds, want.seconds);
          }
          // Faster than every plain assignment only through nesting.
          if (got.nested.empty()) assert_true(got.predicted_seconds == want.seconds);
          ++compared;
        }
      }
    }
  }
  assert_true(compared > 30);
  // (On these one-layer models no spilled assignment is the fastest that fits: they are
  // compared, not chosen. bad_budgets_... and test_recompute.cc cover auto's spilling.)
}

// Budgets from the smallest schedule to `none`'s arena: once one fits, every larger one does,
// the arena stays within each, and the predicted step never gets slower.
static void a_larger_budget_never_gives_a_slower_step(void**) {
  for (const char* model :
       {"transformer:layers=4,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3",
        "resnet:depth=14,width=4,in=3x8x8,classes=4", "mlp:layers=2,width=16,in=8,classes=3"}) {
    const Step s = training_graph(model, 8, kSgd);
    for (bool spilling : {false, true}) {
      AutoOptions o = cost_model(spilling);
      o.smallest = true;
      o.arena_budget = UINT64_MAX / 4;
      const uint64_t smallest = remat::compiler::auto_schedule(s.graph, s.forward_ops, o).arena;
      o.smallest = false;
      const remat::compiler::MemoryPlan none = remat::compiler::plan_memory(s.graph, 64);
      const uint64_t top = none.arena_size + none.persistent_size + 4096;
      double previous = INFINITY;
      bool fitted = false;
      int nested = 0;
      for (int k = 0; k <= 24; ++k) {
        const uint64_t budget =
            smallest * 3 / 4 + (top - smallest * 3 / 4) * static_cast<uint64_t>(k) / 24;
        AutoOptions b = o;
        if (spilling)
          b.device_budget = budget + none.persistent_size;
        else
          b.arena_budget = budget;
        try {
          const AutoSchedule a = remat::compiler::auto_schedule(s.graph, s.forward_ops, b);
          fitted = true;
          if (spilling)
            assert_true(a.arena + a.persistent <= b.device_budget);
          else
            assert_true(a.arena <= budget);
          if (a.predicted_seconds > previous) {
            fail_msg("%s: budget %llu gives %.9g s, a smaller one gave %.9g s", model,
                     static_cast<unsigned long long>(budget), a.predicted_seconds, previous);
          }
          previous = a.predicted_seconds;
          nested += a.nested.empty() ? 0 : 1;
        } catch (const remat::compiler::NoScheduleFits& e) {
          if (fitted)
            fail_msg("%s: budget %llu fits nothing, a smaller one did: %s", model,
                     static_cast<unsigned long long>(budget), e.what());
          assert_true(e.smallest_device > (spilling ? b.device_budget : budget));
        }
      }
      assert_true(fitted);
      // At the largest budget nothing is recomputed.
      assert_true(previous == remat::compiler::predicted_step_seconds(s.graph, o.cost));
      if (std::strncmp(model, "transformer", 11) == 0 && !spilling) assert_true(nested > 0);
    }
  }
}

// Nested recomputation lowers the arena below every plain schedule the family has on a deep
// transformer, and so lets a tighter budget fit.
static void nesting_fits_where_sqrt_and_splits_do_not(void**) {
  const Step s = training_graph(
      "transformer:layers=8,hidden=32,heads=4,ffn=128,seq=32,vocab=50,classes=3", 8, kSgd);
  uint64_t plain = UINT64_MAX;
  for (const char* strategy : {"sqrt", "splits"}) {
    remat::compiler::CompileOptions c;
    c.model = "transformer:layers=8,hidden=32,heads=4,ffn=128,seq=32,vocab=50,classes=3";
    c.batch = 8;
    c.strategy = strategy;
    c.eval_program = false;
    plain = std::min(plain, remat::compiler::compile(c).report.arena_bytes);
  }
  AutoOptions o = cost_model(false);
  o.smallest = true;
  o.arena_budget = UINT64_MAX / 4;
  const AutoSchedule a = remat::compiler::auto_schedule(s.graph, s.forward_ops, o);
  if (!(a.arena < plain))
    fail_msg("auto's smallest arena %llu is not below sqrt's and splits' %llu",
             static_cast<unsigned long long>(a.arena), static_cast<unsigned long long>(plain));
  assert_false(a.nested.empty());
  o.smallest = false;
  o.arena_budget = a.arena;
  const AutoSchedule fitted = remat::compiler::auto_schedule(s.graph, s.forward_ops, o);
  assert_true(fitted.arena <= a.arena);
  assert_false(fitted.nested.empty());
}

static void bad_budgets_are_refused_with_the_figures(void**) {
  const Step s = training_graph("mlp:layers=1,width=16,in=8,classes=3", 64, kSgd);
  AutoOptions o = cost_model(false);
  try {
    remat::compiler::auto_schedule(s.graph, s.forward_ops, o);
    fail_msg("no budget was accepted");
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "strategy 'auto' needs a budget"));
  }
  o.arena_budget = 100;
  try {
    remat::compiler::auto_schedule(s.graph, s.forward_ops, o);
    fail_msg("an arena of 100 bytes was accepted");
  } catch (const remat::compiler::NoScheduleFits& e) {
    assert_non_null(std::strstr(e.what(), "no schedule fits an arena of 100 bytes"));
    assert_non_null(std::strstr(e.what(), "--device-budget allows spilling"));
    assert_true(e.smallest_device > 100);
  }
  // A host budget of 0 forbids spilling: a device budget below the smallest arena recomputation
  // reaches is met by spilling, and refused without host memory.
  const Step t = training_graph(
      "transformer:layers=3,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3", 8, kSgd);
  AutoOptions spill = cost_model(false);
  spill.smallest = true;
  spill.arena_budget = UINT64_MAX / 4;
  const AutoSchedule least = remat::compiler::auto_schedule(t.graph, t.forward_ops, spill);
  spill.smallest = false;
  spill.arena_budget = 0;
  spill.device_budget = least.arena + least.persistent - 1;
  const AutoSchedule spilled = remat::compiler::auto_schedule(t.graph, t.forward_ops, spill);
  assert_false(spilled.spilled.empty());
  assert_true(spilled.host > 0);
  assert_true(spilled.arena + spilled.persistent <= spill.device_budget);
  spill.host_budget = 0;
  try {
    remat::compiler::auto_schedule(t.graph, t.forward_ops, spill);
    fail_msg("a device budget only spilling meets was accepted without host memory");
  } catch (const remat::compiler::NoScheduleFits& e) {
    assert_non_null(std::strstr(e.what(), "with no host memory to spill to"));
  }
  // Too little host memory for the spills refuses too, and says how much host memory was allowed.
  spill.host_budget = spilled.host - 1;
  try {
    const AutoSchedule a = remat::compiler::auto_schedule(t.graph, t.forward_ops, spill);
    assert_true(a.host <= spill.host_budget);  // another assignment may fit in less
  } catch (const remat::compiler::NoScheduleFits& e) {
    assert_non_null(std::strstr(e.what(), "bytes of host spill"));
  }
  o.cost.compute_rate = 0;
  try {
    remat::compiler::auto_schedule(s.graph, s.forward_ops, o);
    fail_msg("a compute rate of 0 was accepted");
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "must be positive"));
  }
}

// Through compile(): auto is what the report says, and the default when a budget is given.
static void compile_reports_the_schedule_auto_chose(void**) {
  remat::compiler::CompileOptions c;
  c.model = "transformer:layers=4,hidden=32,heads=4,ffn=64,seq=16,vocab=50,classes=3";
  c.batch = 8;
  const auto none = remat::compiler::compile(c);
  c.strategy = "auto";
  c.arena_budget = none.report.arena_bytes / 3;
  const auto a = remat::compiler::compile(c);
  assert_true(a.report.arena_bytes <= c.arena_budget);
  assert_true(a.report.recomputed_flops > 0);
  assert_true(a.report.predicted_seconds > none.report.predicted_seconds);
  assert_true(a.report.schedules_planned > 1);
  assert_false(a.report.exhaustive);
  assert_int_equal(a.report.spilled.size(), 0);
  c.arena_budget = 0;
  try {
    remat::compiler::compile(c);
    fail_msg("auto without a budget compiled");
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(std::strstr(e.what(), "needs a budget"));
  }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(auto_is_as_fast_as_brute_force_over_every_keep_recompute_spill_assignment),
      cmocka_unit_test(a_larger_budget_never_gives_a_slower_step),
      cmocka_unit_test(nesting_fits_where_sqrt_and_splits_do_not),
      cmocka_unit_test(bad_budgets_are_refused_with_the_figures),
      cmocka_unit_test(compile_reports_the_schedule_auto_chose),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
