// Benchmark: training-step times of several strategies of one model, their steps interleaved in
// one process (a step of each in turn, every round), printed as a table. It measures; it asserts
// nothing. On a machine whose speed drifts over seconds (a shared VM: step times here moved by
// 2x between runs of step_time minutes apart), steps taken back to back see the same machine, so
// the ratio of each strategy's step to the first strategy's step of the same round is the
// figure to compare: the table gives its median and range over the rounds beside the times.
//
//   build/bench/step_pairs [--backend B] [--threads N] [--steps N] [--warmup N]
//                          MODEL@BATCH:STRATEGY,STRATEGY[,...]
//
// STRATEGY as step_time's (bench/strategy_spec.h), e.g. `none,none/precision=bf16`. Every
// session stays open for the whole run: their arenas are held together.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "bench/bench_session.h"
#include "bench/strategy_spec.h"
#include "compiler/compiler.h"
#include "remat/remat.h"
#include "runtime/port.h"

namespace {

// The middle of |v| once sorted (the upper one of an even count, as StepTimes::median_ms).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One timed step of |fed|'s session in milliseconds; exits naming |model| on an error.
double step_ms(const remat_bench::FedSession& fed, const std::string& model) {
  const uint64_t start = remat::port_now_ns();
  if (remat_session_step(fed.session, nullptr) != REMAT_OK) {
    std::fprintf(stderr, "%s: %s\n", model.c_str(), remat_session_last_error(fed.session));
    std::exit(1);
  }
  return static_cast<double>(remat::port_now_ns() - start) * 1e-6;
}

}  // namespace

int main(int argc, char** argv) {
  const remat_bench::StepFlags flags = remat_bench::parse_step_flags(argc, argv, 1);
  const int steps = flags.steps, warmup = flags.warmup;
  const std::string& backend = flags.backend;
  const size_t threads = flags.threads;
  const std::string spec = flags.specs.size() == 1 ? flags.specs[0] : std::string();
  const size_t at = spec.find('@'), colon = spec.find(':', at == std::string::npos ? 0 : at);
  if (flags.specs.size() != 1 || at == std::string::npos || colon == std::string::npos) {
    std::fprintf(stderr,
                 "usage: step_pairs [--backend B] [--threads N] [--steps N] [--warmup N] "
                 "MODEL@BATCH:STRATEGY,STRATEGY[,...] (one model)\n");
    return 2;
  }
  const std::string model = spec.substr(0, at);
  const int64_t batch = std::atoll(spec.substr(at + 1, colon - at - 1).c_str());
  std::vector<std::string> strategies;
  const std::string list = spec.substr(colon + 1);
  for (size_t p = 0; p <= list.size();) {
    size_t q = list.find(',', p);
    if (q == std::string::npos) q = list.size();
    strategies.push_back(list.substr(p, q - p));
    p = q + 1;
  }
  std::vector<remat_bench::FedSession> sessions;
  std::vector<std::vector<uint8_t>> plans;  // open plans read their bytes in place
  std::vector<double> arena_mib;
  plans.reserve(strategies.size());
  for (const std::string& strategy : strategies) {
    remat::compiler::CompileOptions o;
    o.model = model;
    o.batch = batch;
    o.optimizer = "adam:lr=0.0001";
    try {
      remat_bench::apply_strategy_spec(strategy, &o);
      auto compiled = remat::compiler::compile(o);
      arena_mib.push_back(static_cast<double>(compiled.report.arena_bytes) / 1048576.0);
      plans.push_back(std::move(compiled.plan));
      sessions.push_back(remat_bench::open_session(plans.back(), model, batch, backend, threads));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s@%lld:%s: %s\n", model.c_str(), static_cast<long long>(batch),
                   strategy.c_str(), e.what());
      return 1;
    }
  }
  const char* bf16 = remat::cpu::bf16_gemm_engine();
  std::printf(
      "# remat step pairs on backend %s; %u hardware threads; CPU kernels on %s threads; CPU "
      "matmul: %s; bf16 matmul: %s; %d rounds of one step of each strategy in turn after %d "
      "warm-up rounds\n",
      backend.c_str(), std::thread::hardware_concurrency(),
      threads > 0 ? std::to_string(threads).c_str() : "all hardware", remat::cpu::matmul_engine(),
      bf16 ? bf16 : "widened to float32", steps, warmup);
  std::vector<std::vector<double>> ms(strategies.size());
  for (int round = 0; round < warmup + steps; ++round) {
    for (size_t k = 0; k < sessions.size(); ++k) {
      const double t = step_ms(sessions[k], model);
      if (round >= warmup) ms[k].push_back(t);
    }
  }
  std::printf(
      "| model | batch | strategy | arena MiB | median ms | min ms | time / %s's, median of rounds "
      "| fewest - most |\n",
      strategies[0].c_str());
  std::printf("|---|---|---|---:|---:|---:|---:|---|\n");
  for (size_t k = 0; k < sessions.size(); ++k) {
    std::vector<double> ratios;
    for (size_t r = 0; r < ms[k].size(); ++r) ratios.push_back(ms[k][r] / ms[0][r]);
    std::printf("| %s | %lld | %s | %.1f | %.1f | %.1f | %.3fx | %.3fx - %.3fx |\n", model.c_str(),
                static_cast<long long>(batch), strategies[k].c_str(), arena_mib[k], median(ms[k]),
                *std::min_element(ms[k].begin(), ms[k].end()), median(ratios),
                *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()));
  }
  for (remat_bench::FedSession& fed : sessions) remat_bench::close_session(fed);
  return 0;
}
