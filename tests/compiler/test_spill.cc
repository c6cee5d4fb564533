// The spill cost model: the two-queue copy timeline on hand-timed graphs, and the spill schedule
// on real models (fits the budget, copy ops well placed, hides less as copies get slower).
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"
#include "compiler/strategies/copy_timeline.h"
#include "compiler/strategies/spill.h"
#include "remat/remat.h"

using remat::OpCode;
using remat::compiler::CompileOptions;
using remat::compiler::CopyTimeline;
using remat::compiler::Graph;
using remat::compiler::Op;
using remat::compiler::Phase;
using remat::compiler::Role;

// One compute op that takes |flops| and touches nothing the copies do.
static Op compute(double flops) {
  return Op{OpCode::kRelu, {}, {}, {}, {}, Phase::kForward, 0, flops};
}
static Op copy(OpCode code, int from, int to) {
  return Op{code, {from}, {to}, {}, {}, Phase::kCopy, 0, 0.0};
}
static Op wait(int t) { return Op{OpCode::kWait, {t}, {}, {}, {}, Phase::kCopy, 0, 0.0}; }

// Compute at 10 FLOP/s and copies at 10 B/s: a 10-float tensor (40 bytes) copies in 4 s.
struct TwoTensors {
  Graph g;
  int x, y, x_host, y_host;
  TwoTensors() {
    x = g.add_tensor("x", REMAT_DTYPE_F32, {10}, Role::kActivation);
    y = g.add_tensor("y", REMAT_DTYPE_F32, {10}, Role::kActivation);
    x_host = g.add_tensor("x@host", REMAT_DTYPE_F32, {10}, Role::kCheckpoint);
    y_host = g.add_tensor("y@host", REMAT_DTYPE_F32, {10}, Role::kCheckpoint);
  }
  CopyTimeline run(bool asynchronous = true) const {
    return remat::compiler::simulate_copies(g, 10.0, 10.0, asynchronous);
  }
};

// A (1 s) | spill x from t=1 to t=5 | B (2 s, ends t=3) | wait x: stalls 2 s | C (1 s).
static void a_wait_stalls_compute_until_its_copy_is_done(void**) {
  TwoTensors t;
  t.g.ops = {compute(10), copy(OpCode::kSpill, t.x, t.x_host), compute(20), wait(t.x), compute(10)};
  const CopyTimeline r = t.run();
  assert_true(r.compute_seconds == 4.0);
  assert_true(r.copy_seconds == 4.0);
  assert_true(r.stall_seconds == 2.0);
  assert_true(r.hidden_seconds() == 2.0);
}

// A backend with synchronous copies (the CPU's) hides nothing: every copy is a stall.
static void synchronous_copies_hide_nothing(void**) {
  TwoTensors t;
  t.g.ops = {compute(10), copy(OpCode::kSpill, t.x, t.x_host), compute(200), wait(t.x),
             compute(10)};
  const CopyTimeline r = t.run(false);
  assert_true(r.copy_seconds == 4.0);
  assert_true(r.stall_seconds == 4.0);
  assert_true(r.hidden_seconds() == 0.0);
  assert_true(t.run(true).hidden_seconds() == 4.0);
}

// Two spills issued together run one after the other (t=1..5, 5..9): a wait for the second at
// t=6 stalls 3 s, although compute since its issue (5 s) exceeds its own copy time (4 s).
static void copies_queue_on_one_stream(void**) {
  TwoTensors t;
  t.g.ops = {compute(10), copy(OpCode::kSpill, t.x, t.x_host), copy(OpCode::kSpill, t.y, t.y_host),
             compute(50), wait(t.y)};
  const CopyTimeline r = t.run();
  assert_true(r.copy_seconds == 8.0);
  assert_true(r.stall_seconds == 3.0);
  // With 10 s of compute instead, both copies hide entirely.
  t.g.ops[3] = compute(100);
  assert_true(t.run().stall_seconds == 0.0);
  assert_true(t.run().hidden_seconds() == 8.0);
}

// A prefetch is named by its destination; a copy nobody waits for is joined at the step's end.
static void the_step_ends_when_its_copies_are_done(void**) {
  TwoTensors t;
  t.g.ops = {copy(OpCode::kPrefetch, t.x_host, t.x), compute(10), wait(t.x),
             copy(OpCode::kSpill, t.y, t.y_host), compute(10)};
  const CopyTimeline r = t.run();
  // Prefetch 0..4, compute to 1, stall 3 to 4; spill 4..8, compute to 5, join stalls 3.
  assert_true(r.stall_seconds == 6.0);
  assert_true(r.hidden_seconds() == 2.0);
}

// Where the copy ops of a compiled plan sit: a spill before its wait, which comes after every
// forward reader of the checkpoint; a prefetch before its wait, which comes before every
// reader of the prefetched copy. The runtime's verifier accepts the plan.
static void check_copy_placement(const remat::compiler::CompileResult& r) {
  const Graph& g = r.graph;
  auto reads = [](const Op& op, int t) {
    for (int i : op.inputs) {
      if (i == t) return true;
    }
    return false;
  };
  size_t copies = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (op.code != OpCode::kSpill && op.code != OpCode::kPrefetch) continue;
    ++copies;
    const int device_tensor = op.code == OpCode::kSpill ? op.inputs[0] : op.outputs[0];
    size_t wait = g.ops.size();
    for (size_t j = i + 1; j < g.ops.size() && wait == g.ops.size(); ++j) {
      if (g.ops[j].code == OpCode::kWait && g.ops[j].inputs[0] == device_tensor) wait = j;
    }
    if (wait == g.ops.size())
      fail_msg("copy op %zu of %s has no wait after it", i, g.tensors[device_tensor].name.c_str());
    for (size_t j = 0; j < g.ops.size(); ++j) {
      const Op& other = g.ops[j];
      if (other.code == OpCode::kWait || other.code == OpCode::kSpill ||
          !reads(other, device_tensor))
        continue;
      // A spilled checkpoint is read only before its wait; a prefetched copy only after.
      const bool ok = op.code == OpCode::kSpill ? j < wait : j > wait;
      if (!ok)
        fail_msg("op %zu reads %s on the wrong side of its wait (op %zu)", j,
                 g.tensors[device_tensor].name.c_str(), wait);
    }
  }
  assert_true(copies > 0);
  remat_plan* plan = nullptr;
  char message[256];
  if (remat_plan_open(r.plan.data(), r.plan.size(), &plan, message, sizeof(message)) != REMAT_OK) {
    fail_msg("plan rejected: %s", message);
  }
  remat_plan_close(plan);
}

// With copies that overlap compute, the spills are placed to hide them: at the default rates
// nearly all is hidden, and less the slower the copies. Every placement is well formed.
static void asynchronous_copies_are_placed_to_hide_behind_compute(void**) {
  CompileOptions o;
  o.model = "transformer:layers=4,hidden=64,heads=4,ffn=128,seq=32,vocab=100,classes=2";
  o.batch = 8;
  o.strategy = "splits";
  const auto plain = remat::compiler::compile(o).report;
  o.device_budget = plain.persistent_bytes + plain.arena_bytes / 2;
  const auto sync = remat::compiler::compile(o);
  check_copy_placement(sync);
  assert_true(sync.report.hidden_copy_seconds == 0.0);  // The CPU's synchronous copies.
  o.asynchronous_copies = true;
  double previous_share = 2;
  for (double bandwidth : {1e12, 8e9, 2e8, 2e6}) {
    o.copy_bandwidth = bandwidth;
    const auto r = remat::compiler::compile(o);
    const double share = r.report.hidden_copy_seconds / r.report.copy_seconds;
    printf("bandwidth %.0e: %zu spills, copies %.3g s, %.1f%% hidden\n", bandwidth,
           r.report.spilled.size(), r.report.copy_seconds, 100 * share);
    assert_true(r.report.arena_bytes + r.report.persistent_bytes <= o.device_budget);
    check_copy_placement(r);
    assert_true(share <= previous_share + 1e-12);
    previous_share = share;
    if (bandwidth == 1e12) assert_true(share >= 0.9);
  }
  assert_true(previous_share < 0.5);  // 2e6 B/s: far more copy time than compute.
}

// Each backend has its own defaults, a device suffix is ignored, and an unknown name is an
// error that names it; the compile report records the model used (the plan writer stores it).
static void spill_costs_default_per_backend_and_are_recorded_in_the_report(void**) {
  const auto& cpu = remat::compiler::target_profile("cpu");
  const auto& cuda = remat::compiler::target_profile("cuda:1");
  const auto& opencl = remat::compiler::target_profile("opencl:0:0");
  assert_true(cpu.copy_bandwidth > 0 && cpu.compute_rate > 0);
  assert_false(cpu.asynchronous_copies);
  assert_true(cuda.asynchronous_copies && opencl.asynchronous_copies);
  assert_true(cuda.compute_rate > opencl.compute_rate && opencl.compute_rate > cpu.compute_rate);
  try {
    remat::compiler::target_profile("tpu");
    fail_msg("tpu has no defaults");
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(strstr(e.what(), "'tpu'"));
  }
  CompileOptions o;
  o.model = "mlp:layers=2,width=8,in=4,classes=2";
  o.batch = 2;
  o.copy_bandwidth = cuda.copy_bandwidth;
  o.compute_rate = cuda.compute_rate;
  const auto r = remat::compiler::compile(o).report;
  assert_true(r.copy_bandwidth == cuda.copy_bandwidth && r.compute_rate == cuda.compute_rate);
  o.compute_rate = 0;
  try {
    remat::compiler::compile(o);
    fail_msg("a zero compute rate compiled");
  } catch (const remat::compiler::CompileError& e) {
    assert_non_null(strstr(e.what(), "compute rate"));
  }
}

// spill_order on a hand-timed graph (10 FLOP/s, 10 B/s, asynchronous copies): a is made at
// t = 1 and the forward pass goes on to t = 12, so its 4 s spill hides; b is made last (t = 12),
// so its spill cannot hide at all; both prefetches hide behind a 10 s backward op. a, with no
// exposed copy time, is tried before b, exposed 4 s. Copied synchronously, both expose 8 s and,
// the same size, stay in the order given.
static void spill_order_tries_the_best_hidden_copies_first(void**) {
  Graph g;
  const int a = g.add_tensor("a", REMAT_DTYPE_F32, {10}, Role::kActivation);
  const int b = g.add_tensor("b", REMAT_DTYPE_F32, {10}, Role::kActivation);
  g.ops = {Op{OpCode::kRelu, {}, {a}, {}, {}, Phase::kForward, 0, 10.0}, compute(100),
           Op{OpCode::kRelu, {}, {b}, {}, {}, Phase::kForward, 2, 10.0},
           Op{OpCode::kRelu, {}, {}, {}, {}, Phase::kBackward, 1, 100.0},
           Op{OpCode::kAdd, {a, b}, {}, {}, {}, Phase::kBackward, 0, 10.0}};
  remat::compiler::SpillOptions o;
  o.copy_bandwidth = 10.0;
  o.compute_rate = 10.0;
  o.asynchronous_copies = true;
  o.alignment = 64;
  const std::vector<int> order = remat::compiler::spill_order(g, 3, {b, a}, o);
  assert_int_equal(order.size(), 2);
  assert_int_equal(order[0], a);
  assert_int_equal(order[1], b);
  o.asynchronous_copies = false;
  const std::vector<int> synchronous = remat::compiler::spill_order(g, 3, {b, a}, o);
  assert_int_equal(synchronous[0], b);
  assert_int_equal(synchronous[1], a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spill_order_tries_the_best_hidden_copies_first),
      cmocka_unit_test(a_wait_stalls_compute_until_its_copy_is_done),
      cmocka_unit_test(synchronous_copies_hide_nothing),
      cmocka_unit_test(copies_queue_on_one_stream),
      cmocka_unit_test(the_step_ends_when_its_copies_are_done),
      cmocka_unit_test(asynchronous_copies_are_placed_to_hide_behind_compute),
      cmocka_unit_test(spill_costs_default_per_backend_and_are_recorded_in_the_report),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
