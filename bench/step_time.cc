// Benchmark: median training-step time and arena bytes of remat on a backend (the CPU by
// default), per model and strategy, printed as a table. It measures; it asserts nothing.
// Start-up is in the last two columns: session creation (device buffers, and on OpenCL the
// program build) and the first step (on OpenCL: CLBlast's GEMM build and first kernel launches).
// GFLOP/s is the compiler's FLOP estimate of a step (matmuls exact, a few per element
// otherwise) over the fastest step, to set against bench/sgemm_rate's figures of the same run.
//
//   build/bench/step_time [--backend B] [--threads N] [--steps N] [--warmup N]
//                         MODEL@BATCH[:STRATEGY,...] ...
//
// STRATEGY is a compiler strategy, optionally with the budgets of docs/sizing.md ("Budgets"):
// /arena=SIZE (arena budget of `budget` and `auto`), /device=SIZE (device budget: spill
// checkpoints to host) and /host=SIZE (host spill budget of `auto`), e.g. `splits/device=200MiB`;
// /budget=SIZE, the old name of /arena=, is still read (docs/benchmarks.md records it);
// /matmul=fp32|tf32 is the plan's matmul precision (compile --matmul-precision), and
// /attention=fused|unfused a template's attention ops (compile --attention; default fused),
// /precision=fp32|bf16|fp16 how activations are stored (compile --precision; default fp32).
//
// "FLOP bound ms" is what a recomputing row would take if recomputed FLOPs cost what the
// `none` row's FLOPs cost: the `none` row of the same MODEL@BATCH (listed before it) over
// (1 - recomputed share); "-" without one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_session.h"
#include "bench/strategy_spec.h"
#include "backends/cpu/gemm/gemm.h"
#include "compiler/compiler.h"
#include "remat/remat.h"

namespace {

struct Row {
  std::string model, strategy;
  int64_t batch;
  uint64_t arena, persistent, host;
  double recomputed_share, median_ms, min_ms;
  double create_ms, first_step_ms;  // remat_session_create(); step 0 (warm-up or timed)
  double step_flops;                // the compiler's estimate of a step's FLOPs
};

Row measure(const std::string& model, int64_t batch, const std::string& spec,
            const std::string& backend, size_t threads, int warmup, int steps) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = batch;
  remat_bench::apply_strategy_spec(spec, &o);
  o.optimizer = "adam:lr=0.0001";
  const auto compiled = remat::compiler::compile(o);
  const remat_bench::StepTimes t =
      remat_bench::time_steps(compiled.plan, model, batch, backend, warmup, steps, threads);
  const auto& r = compiled.report;
  return Row{model,
             spec,
             batch,
             r.arena_bytes,
             r.persistent_bytes,
             r.host_bytes,
             r.step_flops > 0 ? r.recomputed_flops / r.step_flops : 0.0,
             t.median_ms(),
             t.timed_ms.front(),
             t.create_ms,
             t.first_step_ms,
             r.step_flops};
}

}  // namespace

int main(int argc, char** argv) {
  const remat_bench::StepFlags flags = remat_bench::parse_step_flags(argc, argv, 2);
  const int steps = flags.steps, warmup = flags.warmup;
  const std::string& backend = flags.backend;
  const size_t threads = flags.threads;
  const std::vector<std::string>& specs = flags.specs;
  if (specs.empty()) {
    std::fprintf(stderr,
                 "usage: step_time [--backend B] [--threads N] [--steps N] [--warmup N] "
                 "MODEL@BATCH[:STRATEGY[/arena=SIZE][/device=SIZE][/host=SIZE],...] ...\n");
    return 2;
  }
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  const char* blas_threads = std::getenv("OPENBLAS_NUM_THREADS");
  const char* blas_core = remat::cpu::matmul_blas_core();
  const char* bf16 = remat::cpu::bf16_gemm_engine();
  const std::string blas = std::string(remat::cpu::matmul_engine()) + " (OpenBLAS core " +
                           (blas_core ? blas_core : "none") + ")";
  std::printf(
      "# remat step time on backend %s; %u hardware threads; CPU kernels on %s threads; CPU "
      "matmul: %s; bf16 matmul: %s; "
      "OPENBLAS_CORETYPE=%s; OPENBLAS_NUM_THREADS=%s; median of %d steps after %d warm-up\n",
      backend.c_str(), std::thread::hardware_concurrency(),
      threads > 0 ? std::to_string(threads).c_str() : "all hardware", blas.c_str(),
      bf16 ? bf16 : "widened to float32", core ? core : "(unset)",
      blas_threads ? blas_threads : "(unset)", steps, warmup);
  std::printf(
      "| model | batch | strategy | arena MiB | persistent MiB | host MiB | recomputed FLOPs | "
      "median ms | min ms "
      "| create ms | first step ms | GFLOP/s (min) | FLOP bound ms |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& spec : specs) {
    const size_t at = spec.find('@');
    if (at == std::string::npos) {
      std::fprintf(stderr, "spec '%s': expected MODEL@BATCH[:STRATEGY,...]\n", spec.c_str());
      return 2;
    }
    const std::string model = spec.substr(0, at);
    const size_t colon = spec.find(':', at);
    const int64_t batch = std::atoll(
        spec.substr(at + 1, colon == std::string::npos ? std::string::npos : colon - at - 1)
            .c_str());
    std::vector<std::string> strategies;
    std::string list = colon == std::string::npos ? "none" : spec.substr(colon + 1);
    for (size_t p = 0; p <= list.size();) {
      size_t q = list.find(',', p);
      if (q == std::string::npos) q = list.size();
      strategies.push_back(list.substr(p, q - p));
      p = q + 1;
    }
    double none_min_ms = 0.0;  // the `none` row of this spec, when measured
    for (const std::string& strategy : strategies) {
      Row r;
      try {
        r = measure(model, batch, strategy, backend, threads, warmup, steps);
      } catch (const std::exception& e) {
        std::printf("| %s | %lld | %s | error: %s |\n", model.c_str(),
                    static_cast<long long>(batch), strategy.c_str(), e.what());
        continue;
      }
      if (strategy == "none") none_min_ms = r.min_ms;
      char bound[32] = "-";
      if (none_min_ms > 0 && r.recomputed_share < 1.0)
        std::snprintf(bound, sizeof(bound), "%.1f", none_min_ms / (1.0 - r.recomputed_share));
      std::printf(
          "| %s | %lld | %s | %.1f | %.1f | %.1f | %.1f%% | %.1f | %.1f | %.1f | %.1f | %.1f | %s "
          "|\n",
          r.model.c_str(), static_cast<long long>(r.batch), r.strategy.c_str(),
          static_cast<double>(r.arena) / 1048576.0, static_cast<double>(r.persistent) / 1048576.0,
          static_cast<double>(r.host) / 1048576.0, 100.0 * r.recomputed_share, r.median_ms,
          r.min_ms, r.create_ms, r.first_step_ms,
          r.min_ms > 0 ? r.step_flops / (r.min_ms * 1e6) : 0.0, bound);
      std::fflush(stdout);
    }
  }
  return 0;
}
