// Opening, feeding and timing a session for the bench programs (bench_session.h).
#include "bench/bench_session.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli/synthetic_task.h"
#include "runtime/port.h"

namespace remat_bench {
namespace {

[[noreturn]] void die(const std::string& model, const char* message) {
  std::fprintf(stderr, "%s: %s\n", model.c_str(), message);
  std::exit(1);
}

double ms_since(uint64_t start) { return static_cast<double>(remat::port_now_ns() - start) * 1e-6; }

}  // namespace

StepTimes time_steps(const std::vector<uint8_t>& plan_bytes, const std::string& model, int64_t batch,
                     const std::string& backend, int warmup, int steps, size_t threads) {
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  char message[512];
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = backend.c_str();
  options.threads = threads;
  if (remat_plan_open(plan_bytes.data(), plan_bytes.size(), &plan, message, sizeof(message)) != REMAT_OK) {
    die(model, message);
  }
  StepTimes t;
  const uint64_t create_start = remat::port_now_ns();
  if (remat_session_create(plan, &options, &session, message, sizeof(message)) != REMAT_OK) die(model, message);
  t.create_ms = ms_since(create_start);
  remat::cli::SyntheticTask task(model, batch, 0);
  const auto names = task.names();
  const auto values = task.batch(0);
  for (size_t i = 0; i < names.size(); ++i) {
    if (remat_session_set_input(session, names[i].c_str(), values[i].data(), values[i].size()) != REMAT_OK) {
      die(model, remat_session_last_error(session));
    }
  }
  for (int s = 0; s < warmup + steps; ++s) {
    const uint64_t start = remat::port_now_ns();
    if (remat_session_step(session, nullptr) != REMAT_OK) die(model, remat_session_last_error(session));
    const double ms = ms_since(start);
    if (s == 0) t.first_step_ms = ms;
    if (s >= warmup) t.timed_ms.push_back(ms);
  }
  std::sort(t.timed_ms.begin(), t.timed_ms.end());
  remat_session_destroy(session);
  remat_plan_close(plan);
  return t;
}

}  // namespace remat_bench
