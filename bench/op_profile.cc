// Profile: where a training step's time goes, by op and phase (forward, backward, recompute,
// update, copy), on one backend. Each op runs through the backend as a step runs it, timed
// alone (a GPU backend is synchronised after every op, which serialises its queues; CUDA runs
// without graph capture, REMAT_CUDA_GRAPHS=0, so each op is launched when it comes). Matmuls
// show their rate: 2 * M * N * K per product over their time. It measures; it asserts nothing.
//
//   build/bench/op_profile [--backend B] [--threads N] [--steps N] [--optimizer SPEC]
//                          [--matmul-shapes] MODEL@BATCH[:STRATEGY]
//
// STRATEGY is bench/step_time's: a strategy with /key=value options such as /precision=bf16.
//
// SPEC is the compiler's optimizer (default adam:lr=0.0001, as bench/step_time's);
// --matmul-shapes splits the matmuls by shape: "matmul MxNxK xP" (P products, t: transposed).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/shared/op_args.h"
#include "bench/bench_session.h"
#include "bench/strategy_spec.h"
#include "compiler/compiler.h"
#include "plan/ops.h"
#include "runtime/port.h"
#include "runtime/session.h"

namespace {

const char* phase_name(remat::fb::Phase phase) {
  switch (phase) {
    case remat::fb::Phase::Forward: return "forward";
    case remat::fb::Phase::Backward: return "backward";
    case remat::fb::Phase::Recompute: return "recompute";
    case remat::fb::Phase::Update: return "update";
    case remat::fb::Phase::Copy: return "copy";
    case remat::fb::Phase::Eval: return "eval";
  }
  return "?";
}

// The row an op is counted in: its name, and a matmul's or head_matmul's shape when |shapes|
// (head_matmul's interleaved bits after an "i").
std::string op_key(const remat::OpCall& call, bool shapes) {
  std::string name = remat::op_name(call.code);
  char text[96];
  if (shapes && call.code == static_cast<uint16_t>(remat::OpCode::kMatMul)) {
    const remat::MatmulShape s = remat::matmul_shape(call);
    std::snprintf(
        text, sizeof(text), " %lldx%lldx%lld x%lld%s%s", static_cast<long long>(s.m),
        static_cast<long long>(s.n), static_cast<long long>(s.k),
        static_cast<long long>(s.mode == remat::MatmulMode::kReduce ? s.batch_a : s.batch_c),
        s.trans_a ? " tA" : "", s.trans_b ? " tB" : "");
    return name + text;
  }
  if (shapes && call.code == static_cast<uint16_t>(remat::OpCode::kHeadMatMul)) {
    const remat::HeadMatmulShape s = remat::head_matmul_shape(call);
    std::snprintf(
        text, sizeof(text), " %lldx%lldx%lld x%lld%s%s i%lld", static_cast<long long>(s.m),
        static_cast<long long>(s.n), static_cast<long long>(s.k),
        static_cast<long long>(s.c.products), s.trans_a ? " tA" : "", s.trans_b ? " tB" : "",
        static_cast<long long>(remat::iattr(call, remat::attr::head_matmul::interleaved)));
    return name + text;
  }
  return name;
}

// A matmul's or head_matmul's multiply-adds times two; 0 for other ops.
double matmul_flops(const remat::OpCall& call) {
  if (call.code == static_cast<uint16_t>(remat::OpCode::kHeadMatMul)) {
    const remat::HeadMatmulShape s = remat::head_matmul_shape(call);
    return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
           static_cast<double>(s.c.products);
  }
  if (call.code != static_cast<uint16_t>(remat::OpCode::kMatMul)) return 0.0;
  const remat::MatmulShape s = remat::matmul_shape(call);
  const int64_t products = s.mode == remat::MatmulMode::kReduce ? s.batch_a : s.batch_c;
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(products);
}

struct Total {
  int calls = 0;     // per step
  double ns = 0;     // over the timed steps
  double flops = 0;  // per step
};

[[noreturn]] void fail(remat_session* s, const char* what) {
  std::fprintf(stderr, "op_profile: %s: %s\n", what, s->error);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 3;
  std::string backend = "cpu", spec, optimizer = "adam:lr=0.0001";
  size_t threads = 0;
  bool shapes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      steps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--backend" && i + 1 < argc)
      backend = argv[++i];
    else if (a == "--optimizer" && i + 1 < argc)
      optimizer = argv[++i];
    else if (a == "--matmul-shapes")
      shapes = true;
    else if (a == "--threads" && i + 1 < argc)
      threads = static_cast<size_t>(std::max(0, std::atoi(argv[++i])));
    else
      spec = a;
  }
  const size_t at = spec.find('@');
  if (at == std::string::npos) {
    std::fprintf(stderr,
                 "usage: op_profile [--backend B] [--threads N] [--steps N] [--optimizer SPEC] "
                 "[--matmul-shapes] "
                 "MODEL@BATCH[:STRATEGY]\n");
    return 2;
  }
  const size_t colon = spec.find(':', at);
  const std::string strategy = colon == std::string::npos ? "none" : spec.substr(colon + 1);
  remat::compiler::CompileOptions o;
  o.model = spec.substr(0, at);
  o.batch = std::atoll(
      spec.substr(at + 1, colon == std::string::npos ? std::string::npos : colon - at - 1).c_str());
  o.optimizer = optimizer;
  remat::compiler::CompileResult compiled;
  try {
    remat_bench::apply_strategy_spec(strategy, &o);
    compiled = remat::compiler::compile(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "op_profile: %s\n", e.what());
    return 1;
  }
  // A captured CUDA step launches nothing until end_step: ops are timed one by one only when
  // they run eagerly (backends/cuda/cuda_backend.h).
  if (backend.compare(0, 4, "cuda") == 0) setenv("REMAT_CUDA_GRAPHS", "0", 1);
  remat_bench::FedSession fed =
      remat_bench::open_session(compiled.plan, o.model, o.batch, backend, threads);
  remat_session* s = fed.session;
  const uint32_t n_ops = remat::step_op_count(s->plan);
  std::map<std::pair<int, std::string>, Total> totals;
  double step_ns = 0;
  // One untimed step first: the arena's pages are touched and the caches warm.
  for (int step = 0; step <= steps; ++step) {
    const remat::StepContext ctx{s->plan->root->seed(), s->step};
    const uint64_t step_start = remat::port_now_ns();
    for (uint32_t i = 0; i < n_ops; ++i) {
      // Each op is a step of its own to the backend: a backend may hold a step's work until
      // end_step, and sync closes any open step (the session's error path relies on that).
      if (s->backend->begin_step(ctx, &s->err) != REMAT_OK) fail(s, "begin_step");
      const uint64_t start = remat::port_now_ns();
      if (s->backend->run_op(s->ops[i], ctx, &s->err) != REMAT_OK) fail(s, "run_op");
      if (s->backend->end_step(&s->err) != REMAT_OK) fail(s, "end_step");
      if (s->backend->sync(&s->err) != REMAT_OK) fail(s, "sync");
      const uint64_t ns = remat::port_now_ns() - start;
      if (step == 0) continue;
      const remat::fb::Phase phase = s->plan->root->ops()->Get(i)->phase();
      Total& t = totals[{static_cast<int>(phase), op_key(s->ops[i], shapes)}];
      t.ns += static_cast<double>(ns);
      if (step == 1) {
        ++t.calls;
        t.flops += matmul_flops(s->ops[i]);
      }
    }
    if (step > 0) step_ns += static_cast<double>(remat::port_now_ns() - step_start);
    ++s->step;
  }
  std::vector<std::pair<std::pair<int, std::string>, Total>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::printf(
      "# remat op profile: %s at batch %lld, strategy %s, optimizer %s, backend %s; mean of %d "
      "steps of "
      "%.1f ms (each op synchronised)\n",
      o.model.c_str(), static_cast<long long>(o.batch), strategy.c_str(), optimizer.c_str(),
      backend.c_str(), steps, step_ns / steps * 1e-6);
  std::printf(
      "| phase | op | calls per step | ms per step | share | matmul GFLOP/s "
      "|\n|---|---|---|---|---|---|\n");
  for (const auto& row : rows) {
    const Total& t = row.second;
    const double ms = t.ns / steps * 1e-6;
    char rate[32] = "";
    if (t.flops > 0) std::snprintf(rate, sizeof(rate), "%.1f", t.flops / (ms * 1e6));
    std::printf("| %s | %s | %d | %.2f | %.1f%% | %s |\n",
                phase_name(static_cast<remat::fb::Phase>(row.first.first)),
                row.first.second.c_str(), t.calls, ms, 100.0 * t.ns / step_ns, rate);
  }
  remat_bench::close_session(fed);
  return 0;
}
